package llmtap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// The benchmarks and the allocation test below drive Handler.ServeHTTP directly, with a fake
// next handler that does what reverse_proxy does with an SSE response — headers, then one Write
// and one Flush per event — into a ResponseWriter that discards, so that the figures are
// llmtap's own cost per event, without sockets or Caddy's routing.

// chatStream is a realistic OpenAI chat stream of n content events (vLLM's chunk layout, one
// token each), a finish chunk, a usage chunk and [DONE], split into the events a proxy writes.
func chatStream(n int) [][]byte {
	const head = `data: {"id":"chatcmpl-8a4f1c2e9b7d4e0f","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,`
	words := []string{" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog"}
	evs := make([][]byte, 0, n+3)
	for i := range n {
		evs = append(evs, fmt.Appendf(nil, `%s"delta":{"content":"%s"},"logprobs":null,"finish_reason":null}]}`+"\n\n", head, words[i%len(words)]))
	}
	evs = append(evs, []byte(head+`"delta":{},"logprobs":null,"finish_reason":"stop"}]}`+"\n\n"))
	evs = append(evs, fmt.Appendf(nil, `data: {"id":"chatcmpl-8a4f1c2e9b7d4e0f","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", n, n+12))
	evs = append(evs, []byte("data: [DONE]\n\n"))
	return evs
}

// discardWriter is the client connection: it keeps nothing and flushes nowhere.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) FlushError() error           { return nil }

// streamer is the fake upstream copy loop: it reads the request body as the proxy would, then
// writes the stream one event at a time, flushing after each through http.ResponseController,
// as reverse_proxy does for text/event-stream.
type streamer struct{ events [][]byte }

func (s streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if r.Body != nil {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return err
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return err
	}
	for _, ev := range s.events {
		if _, err := w.Write(ev); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// reusableBody is a request body that can be rewound between iterations without allocating.
type reusableBody struct{ bytes.Reader }

func (*reusableBody) Close() error { return nil }

// benchRig is a handler with its own measurement engine, and one request reused across
// iterations (ServeHTTP replaces its body with the capturing reader, so each run restores it).
type benchRig struct {
	h    *Handler
	req  *http.Request
	body *reusableBody
	raw  []byte
	w    *discardWriter
	next streamer
}

func newBenchRig(tb testing.TB, events int) *benchRig {
	tb.Helper()
	t := tap.New(tap.Options{})
	tb.Cleanup(func() { _ = t.Close(context.Background()) })
	p := process.New(process.Options{}) // request ids, marks, copy buffers
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	raw := []byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"Tell me a story."}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":128}`)
	rig := &benchRig{
		h:    &Handler{proc: p, tap: t, meters: meter.NewPool(meter.Options{}), streams: new(process.Streams), route: new(pipeline.Route)},
		body: &reusableBody{},
		raw:  raw,
		w:    &discardWriter{h: http.Header{}},
		next: streamer{events: chatStream(events)},
	}
	rig.req = httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	rig.req.Header.Set("X-Request-Id", "bench-request")
	rig.req.ContentLength = int64(len(raw))
	return rig
}

// serve runs one request through llmtap (measured) or straight to the fake upstream.
func (rig *benchRig) serve(tb testing.TB, measured bool) {
	rig.body.Reset(rig.raw)
	rig.req.Body = rig.body
	clear(rig.w.h)
	var err error
	if measured {
		err = rig.h.ServeHTTP(rig.w, rig.req, rig.next)
	} else {
		err = rig.next.ServeHTTP(rig.w, rig.req)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkServeHTTPStream reports the cost per event of a 128-token chat stream passing
// through the handler, against the same stream written with no handler in between. The
// difference is what llmtap adds per event on the proxy's request path (the record's
// finalization runs on the pipeline's goroutine and is included, amortized per event).
// "llmtap-timing-only" forces the "unknown" API, which frames and times events without
// decoding their JSON: the gap between it and "llmtap" is the decoder's share.
func BenchmarkServeHTTPStream(b *testing.B) {
	for _, c := range []struct {
		name     string
		measured bool
		api      string
		passive  bool
	}{{"passthrough", false, "", false}, {"llmtap", true, "", false}, {"llmtap-timing-only", true, "unknown", false}, {"llmtap-passive-headroom", true, "", true}} {
		b.Run(c.name, func(b *testing.B) {
			rig := newBenchRig(b, 128)
			rig.h.meters = meter.NewPool(meter.Options{API: c.api})
			if c.passive { // observed as a live request reverse_proxy sent to 127.0.0.1:8000
				var err error
				if rig.h.passive, err = rig.h.proc.Passive.Acquire(&headroom.Config{TTFTMs: 200}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(rig.h.passive.Release)
				repl := caddy.NewReplacer()
				repl.Set("http.reverse_proxy.upstream.hostport", "127.0.0.1:8000")
				rig.req = rig.req.WithContext(context.WithValue(rig.req.Context(), caddy.ReplacerCtxKey, repl))
			}
			events := len(rig.next.events)
			rig.serve(b, c.measured) // warm the pools
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rig.serve(b, c.measured)
			}
			b.StopTimer()
			rig.h.tap.Flush()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}

// TestServeHTTPAllocationsPerEvent checks that measuring allocates per request, never per
// event: a stream 256 events longer must not cost more allocations (with the records finalized
// in the same run, so the pipeline's work is counted too). The slack of 8 absorbs a pool
// refilled after a garbage collection; one allocation per event would add 256.
func TestServeHTTPAllocationsPerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a quiet heap")
	}
	counts := map[int]float64{}
	for _, n := range []int{16, 272} {
		rig := newBenchRig(t, n)
		rig.serve(t, true)
		rig.h.tap.Flush()
		counts[n] = testing.AllocsPerRun(100, func() {
			rig.serve(t, true)
			rig.h.tap.Flush()
		})
	}
	if extra := counts[272] - counts[16]; extra > 8 {
		t.Errorf("a stream 256 events longer allocated %.0f more times (%.0f vs %.0f per request): the per-event path allocates",
			extra, counts[272], counts[16])
	}
	t.Logf("allocations per request: %.0f with 16 events, %.0f with 272", counts[16], counts[272])
}

var _ caddyhttp.Handler = streamer{}
