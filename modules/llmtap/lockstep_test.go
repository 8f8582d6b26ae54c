package llmtap_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestStreamingLockStep sends streams whose upstream writes each content event only after the
// client read the one before (faultLockstep), over HTTP/1.1 and h2c between client and Caddy.
// Two things follow, whatever the load on the machine:
//
//   - nothing on the way may hold an event back: if Caddy or llmtap buffered the stream
//     instead of flushing each event, the upstream would wait for an acknowledgement that never
//     comes, and the stream would stop;
//   - llmtap's time for event k is exactly bracketed: after the upstream began writing it, and
//     before the client read it, which is before the upstream wrote event k+1 (3 to 5 ms
//     later). An event timed by its neighbour's write, or gaps that do not add up to the
//     events' positions, fall outside.
//
// TestStreamingConcurrent* check the same bounds on the mock's free-running streams, where the
// window is the delivery delay instead of being closed by construction.
func TestStreamingLockStep(t *testing.T) {
	up := startFaultUpstream(t)
	p, _ := loadProxy(t, "\tservers {\n\t\tprotocols h1 h2c\n\t}", proxySite(up.addr, ""))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	h2c := &http.Transport{Protocols: &protos, DisableCompression: true}
	t.Cleanup(h2c.CloseIdleConnections)
	clients := map[string]*http.Client{
		"h1":  newClient(t),
		"h2c": {Transport: h2c, Timeout: 20 * time.Second},
	}
	const streams = 4 // per protocol, at once
	type result struct {
		timed
		err error
	}
	results := make(map[string]*result)
	var wg sync.WaitGroup
	for tag, c := range clients {
		for i := range streams {
			id := fmt.Sprintf("lockstep-%s-%d", tag, i)
			res := &result{}
			results[id] = res
			l := up.lockstep(id)
			wg.Go(func() {
				req, err := testkit.NewPost(t.Context(), p.sites[0]+"/v1/chat/completions", id, chatBody("fault-model", lockstepEvents, true, false))
				if err != nil {
					res.err = err
					return
				}
				req.Header.Set("X-Fault", faultLockstep)
				// Acknowledge each content event as soon as it is complete.
				res.timed, res.err = postTimed(c, req, func(k int) {
					if k < lockstepEvents {
						select {
						case l.acks <- struct{}{}:
						default:
						}
					}
				})
			})
		}
	}
	wg.Wait()

	recs := p.records(t)
	want := lockstepBody()
	for id, res := range results {
		l := up.lockstep(id)
		waitClosed(t, l.done, id+"'s upstream returning") // it never does if the request never reached it
		if l.stuck != "" {
			t.Errorf("%s: %s", id, l.stuck)
			continue
		}
		if res.err != nil || !bytes.Equal(res.body, want) {
			t.Errorf("%s: error %v; the client got %d bytes, want the %d the upstream wrote", id, res.err, len(res.body), len(want))
			continue
		}
		rec, ok := recs[id]
		if !ok {
			t.Errorf("%s: no record in /llmtap/requests", id)
			continue
		}
		checkLockstep(t, id, rec, l, res.timed)
	}
}

// checkLockstep checks one lock-step record against the upstream's writes and the client's
// reads (checkEventTimes), where c_k < w_{k+1} by construction closes each event's window.
func checkLockstep(t *testing.T, id string, rec record.Record, l *lockstep, cl timed) {
	t.Helper()
	w, c := l.writes, cl.reads[:min(len(cl.reads), lockstepEvents)]
	if len(w) != lockstepEvents || len(c) != lockstepEvents {
		t.Errorf("%s: %d writes and %d reads, want %d of each", id, len(w), len(c), lockstepEvents)
		return
	}
	if rec.Status != 200 || !rec.Stream || rec.Error != "" || rec.Finish != "stop" {
		t.Errorf("%s: status %d stream %v error %q finish %q; want 200, a stream, no error, stop", id, rec.Status, rec.Stream, rec.Error, rec.Finish)
	}
	for k := range c {
		if !c[k].After(w[k]) || (k+1 < len(w) && !w[k+1].After(c[k])) {
			t.Fatalf("%s: event %d written at %v, read at %v, next written at %v: the upstream did not keep lock step", id, k, w[k], c[k], w[min(k+1, len(w)-1)])
		}
	}
	checkEventTimes(t, id, rec, cl.sent, l.arrived, w, c)
}
