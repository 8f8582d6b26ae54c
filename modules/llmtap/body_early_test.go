package llmtap_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAnswerBeforeTheBodyEnds: an upstream that answers before it has read the whole request
// body (a server that rejects a request by its start, as one over a size limit) leaves the
// transport still sending that body after the response is complete and the handler has ended
// its measurement. The record must name the model from the part that was captured, and the
// client gets the upstream's answer intact. The handler reads the capture while the transport
// may still read the body on its own goroutine (telemetry/capture guards it); here the body's
// own lock usually orders the two, so the race detector did not flag the unguarded capture in
// this test: TestBodyConcurrentReadAndCapture in telemetry/capture is the race's test.
func TestAnswerBeforeTheBodyEnds(t *testing.T) {
	const answer = `{"error":{"message":"rejected after reading the start of the body"}}`
	model := ownName("early-")
	head := `{"model":"` + model + `","messages":[{"role":"user","content":"`
	upstreamAddr := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the start the client sent at once, then answer.
		if _, err := io.ReadFull(r.Body, make([]byte, len(head))); err != nil {
			t.Errorf("upstream: reading the start of the body: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, answer)
	}))
	p, _ := loadProxy(t, "", site{body: "\tllmtap\n\treverse_proxy " + upstreamAddr})
	c := newClient(t)
	const n = 6
	for i := range n {
		// Even requests are chunked with a short rest, which the proxy's server drains before
		// it answers; odd ones have a Content-Length with a rest too long to drain (over
		// 256 KiB), so the answer goes out while the transport still waits for the rest.
		rest := strings.Repeat("x", 64<<10) + `"}]}`
		if i%2 == 1 {
			rest = strings.Repeat("x", 512<<10) + `"}]}`
		}
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, head)
			// The rest comes after the upstream has answered: the transport is still
			// reading it when the handler has already ended.
			time.Sleep(150 * time.Millisecond)
			_, _ = io.WriteString(pw, rest)
			_ = pw.Close()
		}()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.sites[0]+"/v1/chat/completions", pr)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			req.ContentLength = int64(len(head) + len(rest))
		}
		// A connection whose request body was cut short by an early answer is not reused:
		// Go's server (with or without llmtap in the chain) may read what the client still
		// sends of that body as the next request's header (a 431).
		req.Close = true
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", model+"-"+string(rune('a'+i)))
		resp, err := c.Do(req)
		if err != nil {
			// The proxy may close the connection once the answer is out while the client
			// still writes its body; that is the client's error, not a lost answer.
			t.Logf("request %d: %v", i, err)
			continue
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || string(got) != answer {
			t.Errorf("request %d: status %d body %q (err %v), want the upstream's 413 %q", i, resp.StatusCode, got, err, answer)
		}
	}
	recs := p.records(t)
	seen := 0
	for id, r := range recs {
		if !strings.HasPrefix(id, model+"-") {
			continue
		}
		seen++
		if r.Model != model {
			t.Errorf("%s: record model %q, want %q (read from the captured start of the body)", id, r.Model, model)
		}
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: record status %d, want 413", id, r.Status)
		}
	}
	if seen == 0 {
		t.Fatal("no record of any request")
	}
}
