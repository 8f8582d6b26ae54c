package meter_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
)

// A proxy measures one streamed chat completion: it hands the meter the request body, the
// response headers and each write of the response with the time the write reached it, then
// finishes the record and finalizes it (off the request path, in a real proxy).
func Example() {
	pool := meter.NewPool(meter.Options{})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := pool.Get(t0, "/v1/chat/completions")
	defer m.Release()

	m.RequestBody([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`), false)
	h := http.Header{"Content-Type": {"text/event-stream"}}
	m.Headers(200, h, t0.Add(40*time.Millisecond))
	at := t0.Add(50 * time.Millisecond)
	for _, word := range []string{"Hello", " there", "!"} {
		m.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"`+word+`"}}]}`+"\n\n"), at)
		at = at.Add(10 * time.Millisecond)
	}
	m.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"), at)

	r := m.Finish(at, "", "")
	meter.Finalize(r, nil)
	fmt.Printf("model %s, status %d, error %q\n", r.Model, r.Status, r.Error)
	fmt.Printf("TTFT %.0f ms, ITL %.0f ms, latency %.0f ms\n", *r.TTFTMs, *r.ITLMs, *r.RequestLatencyMs)
	fmt.Printf("tokens in %d (%s), out %d (%s)\n", r.InputTokens, r.InputTokensSource, r.OutputTokens, r.OutputTokensSource)
	// Output:
	// model m, status 200, error ""
	// TTFT 50 ms, ITL 10 ms, latency 70 ms
	// tokens in 9 (usage), out 3 (usage)
}
