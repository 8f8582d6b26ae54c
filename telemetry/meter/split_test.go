package meter

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// ollamaFinal is an Ollama /api/chat final line with the given durations in milliseconds.
func ollamaFinal(queue, load, prompt, eval float64) string {
	ns := func(ms float64) int64 { return int64(ms * 1e6) }
	return fmt.Sprintf(`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",`+
		`"total_duration":%d,"load_duration":%d,"prompt_eval_count":3,"prompt_eval_duration":%d,"eval_count":2,"eval_duration":%d}`+"\n",
		ns(queue+load+prompt+eval), ns(load), ns(prompt), ns(eval))
}

// TestSplitRule drives the meter with an exchange on a synthetic clock: the upstream
// connection in hand at 2 ms (1 ms of it dialing), the request written at 3, the first byte
// at 5, the first token at ttft, and a server that reports the given split. It checks the
// proxy's parts, the derived and reported figures and the disagreement rule on either side of
// its thresholds.
func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		ttft                      float64 // first content event, ms from t0
		queue, load, prompt, eval float64 // what the server reports, ms
		llama                     bool    // llama.cpp's timings instead (no queue)
		disagree                  bool
		why                       string
	}{
		// U = ttft - 2 (connection in hand). S = queue+load+prefill.
		{"agree", 102, 10, 0, 88, 20, false, false, "U 100, S 98: 2 ms of network"},
		{"server claims more", 102, 10, 2, 89.5, 20, false, true, "S 101.5 > U 100 + 1"},
		{"within 1 ms over", 102, 10, 0, 90.9, 20, false, false, "S 100.9 ≤ U + 1: whole-ms rounding"},
		{"server claims far less", 102, 10, 0, 69, 20, false, true, "U - S = 21 > 10 + 10 % of 100"},
		{"within the network's allowance", 102, 10, 0, 81, 20, false, false, "U - S = 19 ≤ 20"},
		{"llama.cpp: less is no disagreement", 102, 0, 0, 20, 20, true, false, "no queue reported: only the over side applies"},
		{"llama.cpp: more is", 102, 0, 0, 101.5, 20, true, true, "S 101.5 > U + 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := NewPool(Options{})
			t0 := time.Now()
			at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
			path, ct, final := "/api/chat", "application/x-ndjson", ollamaFinal(tc.queue, tc.load, tc.prompt, tc.eval)
			first := `{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}` + "\n"
			if tc.llama {
				path, ct = "/v1/chat/completions", "text/event-stream"
				first = chunk(`{"content":"Hi"}`)
				final = fmt.Sprintf(`data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"timings":{"prompt_n":3,"prompt_ms":%g,"predicted_n":2,"predicted_ms":%g}}`+"\n\ndata: [DONE]\n\n", tc.prompt, tc.eval)
			}
			m := pool.Get(t0, path)
			m.Headers(200, http.Header{"Content-Type": {ct}}, at(6))
			m.Write([]byte(first), at(tc.ttft))
			m.Write([]byte(final), at(tc.ttft+tc.eval))
			m.SetUpstream(Upstream{Connect: time.Millisecond, GotConn: 2 * time.Millisecond, Wrote: 3 * time.Millisecond, FirstByte: 5 * time.Millisecond})
			r := m.Finish(at(tc.ttft+tc.eval+1), "", "")
			m.Release()
			s := r.Split
			if s == nil || s.ServerTTFTMs == nil {
				t.Fatalf("no split: %+v", r)
			}
			if *s.ConnectMs != 1 || *s.ProxyMs != 1 || *s.SendMs != 1 || *s.UpstreamHeadersMs != 2 || *s.UpstreamTTFTMs != tc.ttft-2 {
				t.Errorf("proxy side: connect %v, proxy %v, send %v, upstream headers %v, upstream TTFT %v; want 1, 1, 1, 2, %v",
					*s.ConnectMs, *s.ProxyMs, *s.SendMs, *s.UpstreamHeadersMs, *s.UpstreamTTFTMs, tc.ttft-2)
			}
			if tc.llama != (s.QueueMs == nil) || (!tc.llama && (s.QueueSource != record.SplitDerived || *s.QueueMs != tc.queue)) {
				t.Errorf("queue %v (%s), want %v derived (none from llama.cpp)", s.QueueMs, s.QueueSource, tc.queue)
			}
			if want := tc.queue + tc.load + tc.prompt; *s.ServerTTFTMs < want-1e-9 || *s.ServerTTFTMs > want+1e-9 {
				t.Errorf("server TTFT %v, want %v", *s.ServerTTFTMs, want)
			}
			if s.TTFTDisagree != tc.disagree {
				t.Errorf("disagree %v, want %v: %s", s.TTFTDisagree, tc.disagree, tc.why)
			}
		})
	}
}

// TestSplitWriteReportedLate: the transport may report the request's write after the first
// response byte (its writing goroutine runs late); the write is then taken to have ended by
// that byte, so no part is negative.
func TestSplitWriteReportedLate(t *testing.T) {
	pool := NewPool(Options{})
	t0 := time.Now()
	m := pool.Get(t0, "/v1/chat/completions")
	m.Headers(200, http.Header{"Content-Type": {"application/json"}}, t0.Add(6*time.Millisecond))
	m.SetUpstream(Upstream{GotConn: 2 * time.Millisecond, Wrote: 9 * time.Millisecond, FirstByte: 5 * time.Millisecond})
	r := m.Finish(t0.Add(10*time.Millisecond), "", "")
	m.Release()
	if s := r.Split; s == nil || *s.SendMs != 3 || *s.UpstreamHeadersMs != 0 {
		t.Fatalf("split %+v: want send 3 ms (to the first byte) and upstream headers 0", s)
	}
}
