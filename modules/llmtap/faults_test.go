package llmtap_test

// The fault matrix: every way an upstream, a client or a request can misbehave, end to end
// through real Caddy. Each case runs twice, through a site with llmtap in front of
// reverse_proxy and through the same reverse_proxy without it, and checks that the client
// could not tell them apart (status, bytes, complete or cut, when it was cut) and that the
// record names what went wrong.

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// stallTimeout is the stall sites' read_timeout towards the upstream: how long reverse_proxy
// waits for the next byte before it gives up.
const stallTimeout = 300 * time.Millisecond

// faultRig is one Caddy config in front of the scripted upstream: sites[0] is llmtap +
// reverse_proxy, sites[1] the same reverse_proxy alone; sites[2] and [3] are the same pair
// with a read timeout towards the upstream. The server speaks HTTP/1.1 and h2c.
type faultRig struct {
	up     *faultUpstream
	p      *proxy
	client *http.Client
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	up := startFaultUpstream(t)
	timeout := " {\n\t\ttransport http {\n\t\t\tread_timeout " + stallTimeout.String() + "\n\t\t}\n\t}"
	p, _ := loadProxy(t, "\tservers {\n\t\tprotocols h1 h2c\n\t}",
		site{body: "\tllmtap\n\treverse_proxy " + up.addr},
		site{body: "\treverse_proxy " + up.addr},
		site{body: "\tllmtap\n\treverse_proxy " + up.addr + timeout},
		site{body: "\treverse_proxy " + up.addr + timeout},
	)
	return &faultRig{up: up, p: p, client: newClient(t)}
}

// pair runs send through the llmtap site and the plain site of the pair starting at sites[i],
// with request ids name+"-tap" and name+"-plain", and fails the test when the client could tell
// them apart. It returns the llmtap outcome and record.
func (f *faultRig) pair(t *testing.T, i int, name string, send func(url, id string) outcome) (outcome, record.Record) {
	t.Helper()
	tap := send(f.p.sites[i]+"/v1/chat/completions", name+"-tap")
	plain := send(f.p.sites[i+1]+"/v1/chat/completions", name+"-plain")
	if d := tap.sameAs(plain); d != "" {
		t.Errorf("the client could tell llmtap was there: %s", d)
	}
	rec, ok := f.p.records(t)[name+"-tap"]
	if !ok {
		t.Fatalf("no record of %s-tap", name)
	}
	if _, ok := f.p.records(t)[name+"-plain"]; ok {
		t.Errorf("the plain site has a record: the config is not what the test thinks")
	}
	return tap, rec
}

func TestFaults(t *testing.T) {
	f := newFaultRig(t)
	t.Run("upstream responses", f.testScripted)
	t.Run("request bodies", f.testRequestBodies)
	t.Run("upstream resets mid-stream", f.testReset)
	t.Run("upstream stalls", f.testStall)
	t.Run("client cancels mid-stream", f.testCancel)
	t.Run("HTTP/2 stream reset", f.testH2Reset)
	t.Run("100 MiB request body", f.testHugeRequest)
	t.Run("slow client", f.testSlowClient)
}

// testScripted covers upstream responses that complete but are not what an LLM stream should
// be: the client must get them byte for byte, the record must count what was wrong.
func (f *faultRig) testScripted(t *testing.T) {
	sse := map[string]string{"Content-Type": "text/event-stream"}
	ev := func(parts ...string) [][]byte {
		out := make([][]byte, len(parts))
		for i, p := range parts {
			out[i] = []byte(p)
		}
		return out
	}
	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	encoded := []string{sseEvent("a"), sseEvent("b"), sseEvent("c"), sseDone}
	tests := []struct {
		name   string
		reason string
		s      script
		accept string // the client's Accept-Encoding
		check  func(t *testing.T, r record.Record)
	}{
		{
			name:   "invalid_json",
			reason: "undecodable events are counted; the decodable ones still measure",
			s:      script{200, sse, ev(sseEvent("a"), "data: {not json\n\n", "data: [1,2\n\n", sseEvent("b"), sseDone)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, "", 200, 2)
				if r.Malformed != 2 {
					t.Errorf("malformed_events %d, want 2", r.Malformed)
				}
			},
		},
		{
			name:   "all_invalid_json",
			reason: "a stream none of whose events decode is malformed",
			s:      script{200, sse, ev("data: {not json\n\n", "data: nope\n\n", sseDone)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, record.ErrMalformed, 200, 0)
				if r.Malformed != 2 {
					t.Errorf("malformed_events %d, want 2", r.Malformed)
				}
			},
		},
		{
			name:   "oversized_event",
			reason: "a 10 MiB event passes whole but is skipped for decoding, not buffered",
			s:      script{200, sse, ev(sseEvent(strings.Repeat("x", 10<<20)), sseEvent("a"), sseDone)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, "", 200, 1)
				if r.Oversized != 1 {
					t.Errorf("oversized_events %d, want 1", r.Oversized)
				}
			},
		},
		{
			name:   "no_terminator",
			reason: "a last event without its blank line was cut: truncated",
			s:      script{200, sse, ev(sseEvent("a"), strings.TrimSuffix(sseEvent("b"), "\n"))},
			check: func(t *testing.T, r record.Record) {
				want(t, r, record.ErrTruncated, 200, 1)
			},
		},
		{
			name:   "binary_garbage",
			reason: "64 KiB of random bytes labelled SSE pass untouched and are no stream",
			s:      script{200, sse, [][]byte{garbage}},
			check: func(t *testing.T, r record.Record) {
				if r.Error != record.ErrTruncated && r.Error != record.ErrMalformed {
					t.Errorf("error %q, want truncated or malformed", r.Error)
				}
				if r.ContentEvents != 0 || r.TTFTMs != nil {
					t.Errorf("%d content events, ttft %v; want none", r.ContentEvents, r.TTFTMs)
				}
			},
		},
		{
			name:   "invalid_utf8",
			reason: "invalid UTF-8 inside content is content: measured, passed as is",
			s:      script{200, sse, ev(sseEvent("ok \xff\xfe\xc3("), sseEvent("b"), sseDone)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, "", 200, 2)
				if r.OutputTokens < 2 {
					t.Errorf("output tokens %d, want at least 2", r.OutputTokens)
				}
			},
		},
		{
			name:   "gzip_sse",
			reason: "a gzip-encoded stream passes encoded and is measured decoded",
			s:      script{200, map[string]string{"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, encodedParts(t, "gzip", encoded)},
			accept: "gzip",
			check: func(t *testing.T, r record.Record) {
				want(t, r, "", 200, 3)
				if r.Malformed != 0 || len(r.InterChunkMs) != 2 {
					t.Errorf("malformed %d, %d gaps; want 0, 2", r.Malformed, len(r.InterChunkMs))
				}
			},
		},
		{
			name:   "br_sse",
			reason: "a br-encoded stream passes encoded and is measured decoded",
			s:      script{200, map[string]string{"Content-Type": "text/event-stream", "Content-Encoding": "br"}, encodedParts(t, "br", encoded)},
			accept: "br",
			check: func(t *testing.T, r record.Record) {
				want(t, r, "", 200, 3)
			},
		},
		{
			name:   "bad_gzip_sse",
			reason: "a body that does not decode in its Content-Encoding is malformed, and still passes",
			s:      script{200, map[string]string{"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, ev(sseEvent("not gzip"), sseDone)},
			accept: "gzip",
			check: func(t *testing.T, r record.Record) {
				want(t, r, record.ErrMalformed, 200, 0)
				if r.Malformed != 1 {
					t.Errorf("malformed_events %d, want 1", r.Malformed)
				}
			},
		},
		{
			name:   "http_429",
			reason: "an error status is http_status, with the server's message",
			s: script{429, map[string]string{"Content-Type": "application/json", "Retry-After": "1"},
				ev(`{"error":{"message":"slow down","type":"rate_limit_error"}}`)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, record.ErrHTTP, 429, 0)
				if r.ErrorMsg != "slow down" || r.TTFTMs != nil || r.RequestLatencyMs != nil {
					t.Errorf("message %q ttft %v latency %v; want the server's, none, none", r.ErrorMsg, r.TTFTMs, r.RequestLatencyMs)
				}
			},
		},
		{
			name:   "http_503",
			reason: "a 5xx is http_status too",
			s:      script{503, map[string]string{"Content-Type": "application/json"}, ev(`{"error":{"message":"overloaded","type":"server_error"}}`)},
			check: func(t *testing.T, r record.Record) {
				want(t, r, record.ErrHTTP, 503, 0)
				if r.ErrorMsg != "overloaded" {
					t.Errorf("message %q, want overloaded", r.ErrorMsg)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.up.script(tc.name, tc.s)
			hdr := map[string]string{}
			if tc.accept != "" {
				hdr["Accept-Encoding"] = tc.accept
			}
			body := chatBody("fault-model", 8, true, false)
			out, rec := f.pair(t, 0, tc.name, func(url, id string) outcome {
				return exchange(t.Context(), f.client, url, id, tc.name, bytes.NewReader(body), int64(len(body)), "application/json", hdr)
			})
			if out.err != nil || !bytes.Equal(out.body, tc.s.body()) {
				t.Errorf("%s: the client got %d bytes (%v), the upstream sent %d", tc.reason, len(out.body), out.err, len(tc.s.body()))
			}
			if rec.Bytes != int64(len(tc.s.body())) {
				t.Errorf("%s: %d bytes recorded, %d sent", tc.reason, rec.Bytes, len(tc.s.body()))
			}
			tc.check(t, rec)
		})
	}
}

// want checks a record's error class, status and content events.
func want(t *testing.T, r record.Record, errClass string, status, contentEvents int) {
	t.Helper()
	if r.Error != errClass || r.Status != status || r.ContentEvents != contentEvents {
		t.Errorf("error %q (%s), status %d, %d content events; want %q, %d, %d",
			r.Error, r.ErrorMsg, r.Status, r.ContentEvents, errClass, status, contentEvents)
	}
}

// testRequestBodies covers odd request bodies: the upstream must receive each unchanged (the
// echo reports size, hash and content type, and the client compares both sites' answers).
func (f *faultRig) testRequestBodies(t *testing.T) {
	tests := []struct {
		name, reason, contentType string
		body                      []byte
		status                    int
		errClass                  string
	}{
		{"empty", "a request without a body reaches the upstream without one", "application/json", nil, 400, record.ErrHTTP},
		{"invalid_json", "an unparsable body passes unchanged; the model is unknown", "application/json", []byte(`{"model":"fault-model","messages":[{`), 200, ""},
		{"wrong_content_type", "a JSON body labelled text/plain passes with its label", "text/plain; charset=latin1", chatBody("fault-model", 8, false, false), 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "body_" + tc.name
			_, rec := f.pair(t, 0, name, func(url, id string) outcome {
				return exchange(t.Context(), f.client, url, id, faultEcho, bytes.NewReader(tc.body), int64(len(tc.body)), tc.contentType, nil)
			})
			got, ok := f.up.receivedFor(name + "-tap")
			if !ok || got.n != int64(len(tc.body)) || got.contentType != tc.contentType {
				t.Errorf("%s: the upstream got %d bytes typed %q, want %d typed %q", tc.reason, got.n, got.contentType, len(tc.body), tc.contentType)
			}
			if rec.Status != tc.status || rec.Error != tc.errClass {
				t.Errorf("%s: status %d error %q (%s), want %d %q", tc.reason, rec.Status, rec.Error, rec.ErrorMsg, tc.status, tc.errClass)
			}
		})
	}
}

// testReset: the upstream resets its connection mid-stream. Both clients get the two events,
// then a cut body; the record says upstream_failure with the two events measured.
func (f *faultRig) testReset(t *testing.T) {
	body := chatBody("fault-model", 8, true, false)
	_, rec := f.pair(t, 0, "reset", func(url, id string) outcome {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("X-Fault", faultReset)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got := readUntil(t, resp.Body, "\n\n", 2)
		f.up.open(id) // the client has both events: nothing is in flight when the reset comes
		rest, err := io.ReadAll(resp.Body)
		return outcome{status: resp.StatusCode, body: append(got, rest...), err: err}
	})
	if rec.Error != record.ErrUpstream || rec.Status != 200 || rec.ContentEvents != 2 || rec.Bytes != int64(len(resetEvents)) {
		t.Errorf("error %q status %d, %d content events, %d bytes; want %q, 200, 2, %d",
			rec.Error, rec.Status, rec.ContentEvents, rec.Bytes, record.ErrUpstream, len(resetEvents))
	}
}

// testStall: the upstream sends one event and goes silent; reverse_proxy's read timeout cuts
// the response. Both clients are cut, no sooner than the timeout and llmtap's no later than
// the plain proxy's by more than scheduling noise; the record says upstream_failure.
func (f *faultRig) testStall(t *testing.T) {
	body := chatBody("fault-model", 8, true, false)
	cutAfter := make(map[string]time.Duration)
	out, rec := f.pair(t, 2, "stall", func(url, id string) outcome {
		o := exchange(t.Context(), f.client, url, id, faultStall, bytes.NewReader(body), int64(len(body)), "application/json", nil)
		cutAfter[id] = o.elapsed
		return o
	})
	// A sanity bound, far above scheduling noise: llmtap must not hold a failing response.
	if late := cutAfter["stall-tap"] - cutAfter["stall-plain"]; late > 3*time.Second {
		t.Errorf("the client was cut %v later through llmtap than through the plain proxy (%v)", late, cutAfter["stall-plain"])
	}
	if out.err == nil || string(out.body) != sseEvent("before the stall") {
		t.Errorf("the client got %q and %v; want the one event, then a cut", out.body, out.err)
	}
	if out.elapsed < stallTimeout {
		t.Errorf("the stream was cut after %v, before the %v read timeout", out.elapsed, stallTimeout)
	}
	if rec.Error != record.ErrUpstream || rec.Status != 200 || rec.ContentEvents != 1 || rec.DurationMs < record.Ms(stallTimeout) {
		t.Errorf("error %q status %d, %d content events, duration %.0f ms; want %q, 200, 1, at least %v",
			rec.Error, rec.Status, rec.ContentEvents, rec.DurationMs, record.ErrUpstream, stallTimeout)
	}
}

// cancelMidStream reads three events of an endless stream from url with client c, then
// cancels the request, and waits for the cancellation to reach the upstream. It reports
// whether the client's connection was reused from an earlier request.
func (f *faultRig) cancelMidStream(t *testing.T, c *http.Client, url, id string) outcome {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("X-Request-Id", id)
	req.Header.Set("X-Fault", faultEndless)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readUntil(t, resp.Body, "\n\n", 3)
	cancel()
	_, err = io.ReadAll(resp.Body)
	waitClosed(t, f.up.endedCh(id), "the upstream seeing "+id+" canceled")
	return outcome{status: resp.StatusCode, err: err}
}

// testCancel: the client goes away mid-stream. The cancellation reaches the upstream through
// llmtap as it does without it; the record says client_canceled.
func (f *faultRig) testCancel(t *testing.T) {
	_, rec := f.pair(t, 0, "cancel", func(url, id string) outcome {
		return f.cancelMidStream(t, f.client, url, id)
	})
	if rec.Error != record.ErrCanceled || rec.Status != 200 || rec.ContentEvents < 3 {
		t.Errorf("error %q status %d, %d content events; want %q, 200, at least 3", rec.Error, rec.Status, rec.ContentEvents, record.ErrCanceled)
	}
}

// testH2Reset: over HTTP/2 the client resets one stream (RST_STREAM) mid-response. The
// upstream sees it canceled, the record says client_canceled, and the connection carries on:
// the next request on it succeeds.
func (f *faultRig) testH2Reset(t *testing.T) {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	body := chatBody("fault-model", 8, true, false)
	f.up.script("h2_after", script{200, map[string]string{"Content-Type": "text/event-stream"}, [][]byte{[]byte(sseEvent("a") + sseDone)}})
	_, rec := f.pair(t, 0, "h2reset", func(url, id string) outcome {
		out := f.cancelMidStream(t, c, url, id)
		// The same connection serves the next request.
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		next := exchange(httptrace.WithClientTrace(t.Context(), trace), c, url, id+"-next", "h2_after", bytes.NewReader(body), int64(len(body)), "application/json", nil)
		if next.err != nil || next.status != 200 || !reused {
			t.Errorf("%s: the next request got %d, %v, reused connection %v; want 200 on the same connection", id, next.status, next.err, reused)
		}
		out.body = next.body
		return out
	})
	if rec.Error != record.ErrCanceled || rec.ContentEvents < 3 {
		t.Errorf("error %q, %d content events; want %q, at least 3", rec.Error, rec.ContentEvents, record.ErrCanceled)
	}
	if next := f.p.records(t)["h2reset-tap-next"]; next.Error != "" || next.ContentEvents != 1 {
		t.Errorf("the request after the reset: error %q, %d content events; want none, 1", next.Error, next.ContentEvents)
	}
}

// testHugeRequest streams a 100 MiB request body from a generator: the upstream must receive
// every byte through both sites, and llmtap's capture must stay bounded (its allocations
// beyond the plain proxy's are a few MiB, not the body).
func (f *faultRig) testHugeRequest(t *testing.T) {
	const size = 100 << 20
	allocs := make(map[string]uint64)
	_, rec := f.pair(t, 0, "huge", func(url, id string) outcome {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out := exchange(t.Context(), f.client, url, id, faultEcho, &genReader{n: size}, size, "application/json", nil)
		runtime.ReadMemStats(&after)
		allocs[id] = after.TotalAlloc - before.TotalAlloc
		if got, _ := f.up.receivedFor(id); got.n != size {
			t.Errorf("%s: the upstream received %d bytes, want %d", id, got.n, size)
		}
		return out
	})
	extra := int64(allocs["huge-tap"]) - int64(allocs["huge-plain"])
	t.Logf("allocated while sending 100 MiB: %d KiB through llmtap, %d KiB through the plain proxy",
		allocs["huge-tap"]>>10, allocs["huge-plain"]>>10)
	if extra > 16<<20 {
		t.Errorf("llmtap allocated %d MiB more than the plain proxy for a 100 MiB body: the capture is not bounded", extra>>20)
	}
	if rec.Status != 200 || rec.Error != "" || rec.OutputTokens != 2 {
		t.Errorf("status %d error %q (%s), %d output tokens; want 200, none, 2", rec.Status, rec.Error, rec.ErrorMsg, rec.OutputTokens)
	}
}

// testSlowClient: the upstream writes 20 MiB of SSE to a client that stops reading. The
// upstream's writes must block (back-pressure reaches it through llmtap) and the proxy's heap
// must not hold the stream: no more than a few MiB beyond the plain proxy's. Then the client
// reads the rest, and gets every byte.
func (f *faultRig) testSlowClient(t *testing.T) {
	total, sum := bigStream()
	heap := make(map[string]uint64)
	// The tokenizer loads its vocabulary (~9 MiB) on first use, in the record pipeline: load
	// it now so that it is in both heap figures.
	if _, err := tokens.Count([]byte("warm up")); err != nil {
		t.Fatal(err)
	}
	_, rec := f.pair(t, 0, "slow", func(url, id string) outcome {
		// The record pipeline finishes the previous request (token counting) off the request
		// path; let it, so that its work is in neither figure.
		waitIdle(t)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("X-Fault", faultBig)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		progress, done := f.up.bigState(id)
		// Read nothing until the upstream's writes stop advancing: the buffers on the way
		// are full.
		last, still := int64(-1), 0
		for deadline := time.Now().Add(10 * time.Second); still < 5; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the upstream kept writing (%d bytes) while the client read nothing", id, progress.Load())
			}
			if p := progress.Load(); p == last {
				still++
			} else {
				last, still = p, 0
			}
		}
		select {
		case <-done:
			t.Errorf("%s: the upstream wrote the whole %d MiB while the client read nothing: something buffered it", id, total>>20)
		default:
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // the second empties what sync.Pools kept through the first
		runtime.ReadMemStats(&ms)
		heap[id] = ms.HeapAlloc
		t.Logf("%s: the upstream's writes stopped after %d KiB of %d; heap %d KiB", id, last>>10, total>>10, ms.HeapAlloc>>10)
		// Now read it all, slowly at first.
		h := newSum()
		buf := make([]byte, 32<<10)
		for range 8 {
			n, _ := io.ReadFull(resp.Body, buf)
			h.Write(buf[:n])
			time.Sleep(5 * time.Millisecond)
		}
		n, err := io.Copy(h, resp.Body)
		n += 8 * int64(len(buf))
		if n != total || h.hex() != sum {
			t.Errorf("%s: the client got %d bytes (hash match %v), the upstream sent %d", id, n, h.hex() == sum, total)
		}
		return outcome{status: resp.StatusCode, err: err}
	})
	if extra := int64(heap["slow-tap"]) - int64(heap["slow-plain"]); extra > 4<<20 {
		t.Errorf("the heap held %d KiB more with llmtap than without while the client did not read", extra>>10)
	}
	if rec.Error != "" || rec.Bytes != total || rec.ContentEvents != bigEventCount {
		t.Errorf("error %q, %d bytes, %d content events; want none, %d, %d", rec.Error, rec.Bytes, rec.ContentEvents, total, bigEventCount)
	}
}
