package llmtap_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

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
				req, err := newPost(t.Context(), p.sites[0]+"/v1/chat/completions", id, chatBody("fault-model", lockstepEvents, true, false))
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
		<-l.done
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

// checkLockstep checks one lock-step record against the upstream's writes w and the client's
// reads c, all on this process's monotonic clock. Event k's time r_k lies in [w_k, c_k], and
// c_k < w_{k+1} by construction. From t0, which is after the client sent the request (s) and
// before the upstream began to answer (A):
//
//	w_k - A  <=  r_k - t0  <=  c_k - s        (its time from t0; for k = 0 the TTFT)
//	w_k - c_0  <=  r_k - r_0  <=  c_k - w_0   (its position after the first, from the gaps)
func checkLockstep(t *testing.T, id string, rec record.Record, l *lockstep, cl timed) {
	t.Helper()
	w, c := l.writes, cl.reads[:min(len(cl.reads), lockstepEvents)]
	if len(w) != lockstepEvents || len(c) != lockstepEvents {
		t.Errorf("%s: %d writes and %d reads, want %d of each", id, len(w), len(c), lockstepEvents)
		return
	}
	if rec.Status != 200 || !rec.Stream || rec.Error != "" || rec.Finish != "stop" ||
		rec.ContentEvents != lockstepEvents || len(rec.InterChunkMs) != lockstepEvents-1 || rec.TTFTMs == nil || rec.RequestLatencyMs == nil {
		t.Errorf("%s: status %d stream %v error %q finish %q, %d content events, %d gaps, ttft %v, latency %v; want 200, a stream, no error, stop, %d events",
			id, rec.Status, rec.Stream, rec.Error, rec.Finish, rec.ContentEvents, len(rec.InterChunkMs), rec.TTFTMs, rec.RequestLatencyMs, lockstepEvents)
		return
	}
	for k := range c {
		if !c[k].After(w[k]) || (k+1 < len(w) && !w[k+1].After(c[k])) {
			t.Fatalf("%s: event %d written at %v, read at %v, next written at %v: the upstream did not keep lock step", id, k, w[k], c[k], w[min(k+1, len(w)-1)])
		}
	}
	at, outside := *rec.TTFTMs, 0
	for k := range lockstepEvents {
		if k > 0 {
			at += rec.InterChunkMs[k-1]
		}
		lo, hi := msSince(l.arrived, w[k]), msSince(cl.sent, c[k])
		pos, posLo, posHi := at-*rec.TTFTMs, msSince(c[0], w[k]), msSince(w[0], c[k])
		if at < lo-causalSlackMs || at > hi+causalSlackMs || pos < posLo-causalSlackMs || pos > posHi+causalSlackMs {
			if outside == 0 {
				t.Errorf("%s: event %d at %.3f ms from t0, want %.3f to %.3f ms; %.3f ms after the first, want %.3f to %.3f ms (the upstream's write to the client's read)",
					id, k, at, lo, hi, pos, posLo, posHi)
			}
			outside++
		}
	}
	if outside > 1 {
		t.Errorf("%s: %d of %d events outside their bounds", id, outside, lockstepEvents)
	}
	if d := *rec.RequestLatencyMs - at; abs(d) > causalSlackMs {
		t.Errorf("%s: request latency %.3f ms, the gaps put the last event at %.3f ms", id, *rec.RequestLatencyMs, at)
	}
}
