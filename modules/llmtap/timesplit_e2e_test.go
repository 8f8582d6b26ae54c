package llmtap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
)

// splitCase is one server shape of TestTimeSplitThroughCaddy.
type splitCase struct {
	name   string
	cfg    mockllm.Config
	path   string
	body   string
	stream bool
	// parallel requests are sent at once, so that all but one queue behind the mock's one
	// slot when cfg.Slots is 1.
	parallel int
	check    func(t *testing.T, r record.Record, s *record.TimeSplit)
}

// ollamaChat is an Ollama /api/chat body for n tokens.
func ollamaChat(model string, n int, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"Tell me about the lighthouse."}],"options":{"num_predict":%d}}`, model, stream, n)
}

// TestTimeSplitThroughCaddy sends requests of every server shape the mock speaks through real
// Caddy and checks the time split in their records: where each figure came from, and that the
// figures are consistent with the delays the mock applied and with what the proxy measured,
// by causal bounds only (no wall-clock tolerances): the server's TTFT (queue + load + prefill)
// cannot exceed the proxy's TTFT counted from the moment the request was written upstream; its
// queue, prefill and decode together cannot exceed the proxy's request latency; its prefill
// is at least the TTFT the mock applied; a queued request waited at least one whole response
// of the request ahead of it. When the mock lies (TimingsScale), the disagreement flag is set.
func TestTimeSplitThroughCaddy(t *testing.T) {
	const ttft, itl, tokens = 100 * time.Millisecond, 5 * time.Millisecond, 8
	base := mockllm.Config{TTFT: ttft, ITL: itl, PromptCounter: mockllm.PromptApprox, LogEvents: true}
	with := func(f func(*mockllm.Config)) mockllm.Config { c := base; f(&c); return c }
	applied := record.Ms(ttft + (tokens-1)*itl)
	causal := func(t *testing.T, r record.Record, s *record.TimeSplit) {
		t.Helper()
		if s.ServerTTFTMs == nil || s.UpstreamTTFTMs == nil || r.TTFTMs == nil {
			t.Fatalf("server or upstream TTFT missing: %+v", s)
		}
		if *s.ServerTTFTMs > *s.UpstreamTTFTMs+causalSlackMs {
			t.Errorf("server TTFT %.3f ms > the proxy's %.3f ms from the request's write", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
		}
		if *s.UpstreamTTFTMs > *r.TTFTMs+causalSlackMs {
			t.Errorf("upstream TTFT %.3f ms > TTFT %.3f ms", *s.UpstreamTTFTMs, *r.TTFTMs)
		}
		if *s.PrefillMs < record.Ms(ttft) {
			t.Errorf("prefill %.3f ms < the TTFT %v the mock applied", *s.PrefillMs, ttft)
		}
		sum := *s.PrefillMs + *s.DecodeMs
		if s.QueueMs != nil {
			sum += *s.QueueMs
		}
		if sum < applied || sum > *r.RequestLatencyMs+causalSlackMs {
			t.Errorf("queue+prefill+decode %.3f ms outside [%.3f applied, %.3f request latency]", sum, applied, *r.RequestLatencyMs)
		}
		if s.NetworkMs == nil || *s.NetworkMs != *s.UpstreamTTFTMs-*s.ServerTTFTMs {
			t.Errorf("network_ms %v is not upstream_ttft_ms - server_ttft_ms", s.NetworkMs)
		}
	}
	cases := []splitCase{
		{
			name: "ollama chat, queued", cfg: with(func(c *mockllm.Config) { c.Slots = 1 }),
			path: "/api/chat", body: ollamaChat("m", tokens, true), stream: true, parallel: 2,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server == nil || r.Server.Format != "ollama" || s.PrefillSource != record.SplitServer ||
					s.DecodeSource != record.SplitServer || s.QueueSource != record.SplitDerived || s.LoadMs == nil {
					t.Fatalf("sources: server %+v, split %+v", r.Server, s)
				}
				causal(t, r, s)
				if s.TTFTDisagree {
					t.Errorf("an honest server's TTFT flagged: server %.3f, upstream %.3f ms", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
				}
			},
		},
		{
			name: "ollama generate body", cfg: base, path: "/api/generate",
			body: fmt.Sprintf(`{"model":"m","stream":false,"prompt":"hi","options":{"num_predict":%d}}`, tokens), parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if s.PrefillMs == nil || s.QueueMs == nil || s.DecodeMs == nil || *s.PrefillMs < record.Ms(ttft) || s.ServerTTFTMs != nil {
					t.Fatalf("a body's split: %+v (a body has no TTFT to compare)", s)
				}
				if sum := *s.QueueMs + *s.PrefillMs + *s.DecodeMs; sum < applied || sum > *r.RequestLatencyMs+causalSlackMs {
					t.Errorf("queue+prefill+decode %.3f ms outside [%.3f, %.3f]", sum, applied, *r.RequestLatencyMs)
				}
			},
		},
		{
			name: "llama.cpp timings", cfg: with(func(c *mockllm.Config) { c.Timings = true }),
			path: "/v1/chat/completions", body: string(chatBody("m", tokens, true, false)), stream: true, parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server == nil || r.Server.Format != "llama.cpp" || s.PrefillSource != record.SplitServer || s.QueueMs != nil {
					t.Fatalf("sources: server %+v, split %+v", r.Server, s)
				}
				causal(t, r, s)
				if s.TTFTDisagree {
					t.Errorf("an honest server's TTFT flagged: server %.3f, upstream %.3f ms", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
				}
			},
		},
		{
			name: "tgi generate headers, queued", cfg: with(func(c *mockllm.Config) { c.Slots = 1 }),
			path: "/generate", body: fmt.Sprintf(`{"inputs":"hi","parameters":{"max_new_tokens":%d}}`, tokens), parallel: 2,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server == nil || r.Server.Format != "tgi" || s.QueueSource != record.SplitServer || s.InferenceMs == nil || s.PrefillMs != nil {
					t.Fatalf("sources: server %+v, split %+v", r.Server, s)
				}
				// TGI rounds down to whole milliseconds.
				if *s.InferenceMs < applied-1 || *s.QueueMs+*s.InferenceMs > *r.RequestLatencyMs+causalSlackMs {
					t.Errorf("queue %.0f + inference %.0f ms outside [%.3f, %.3f]", *s.QueueMs, *s.InferenceMs, applied, *r.RequestLatencyMs)
				}
			},
		},
		{
			name: "tgi stream: no server split", cfg: base, path: "/generate_stream", stream: true, parallel: 1,
			body: fmt.Sprintf(`{"inputs":"hi","parameters":{"max_new_tokens":%d,"details":true}}`, tokens),
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server != nil || s.PrefillMs != nil || s.QueueMs != nil || s.TTFTDisagree {
					t.Fatalf("TGI streams report no times, yet: server %+v, split %+v", r.Server, s)
				}
			},
		},
		{
			name: "llama.cpp lies high", cfg: with(func(c *mockllm.Config) { c.Timings, c.TimingsScale = true, 3 }),
			path: "/v1/chat/completions", body: string(chatBody("m", tokens, true, false)), stream: true, parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if !s.TTFTDisagree {
					t.Errorf("server TTFT %.3f ms, three times the truth, against %.3f ms at the proxy: not flagged", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
				}
			},
		},
		{
			name: "ollama lies low", cfg: with(func(c *mockllm.Config) { c.TimingsScale = 0.2 }),
			path: "/api/chat", body: ollamaChat("m", tokens, true), stream: true, parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if !s.TTFTDisagree {
					t.Errorf("server TTFT %.3f ms, a fifth of the truth, against %.3f ms at the proxy: not flagged", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
				}
			},
		},
	}
	c := newClient(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, tc.cfg)
			p, _ := loadProxy(t, "", proxySite(up.addr, ""))
			prefix := ownName("split")
			var wg sync.WaitGroup
			for i := range tc.parallel {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, body, err := post(context.Background(), c, p.sites[0]+tc.path, fmt.Sprintf("%s-%d", prefix, i), []byte(tc.body))
					if err != nil || resp.StatusCode != 200 {
						t.Errorf("request %d: %v %v: %s", i, err, resp, body)
					}
				}()
			}
			wg.Wait()
			recs := p.records(t)
			queued := 0
			for i := range tc.parallel {
				r, ok := recs[fmt.Sprintf("%s-%d", prefix, i)]
				if !ok {
					t.Fatalf("no record of request %d", i)
				}
				s := r.Split
				if s == nil || s.ConnectMs == nil || s.ProxyMs == nil || s.SendMs == nil || s.UpstreamHeadersMs == nil {
					b, _ := json.Marshal(r)
					t.Fatalf("the proxy's side of the split is missing: %s", b)
				}
				if r.HeadersMs != nil && *s.ProxyMs+*s.ConnectMs+*s.SendMs+*s.UpstreamHeadersMs > *r.HeadersMs+causalSlackMs {
					t.Errorf("proxy %.3f + connect %.3f + send %.3f + upstream headers %.3f ms > headers_ms %.3f",
						*s.ProxyMs, *s.ConnectMs, *s.SendMs, *s.UpstreamHeadersMs, *r.HeadersMs)
				}
				if r.Stream != tc.stream {
					t.Errorf("stream %v, want %v", r.Stream, tc.stream)
				}
				tc.check(t, r, s)
				if s.QueueMs != nil && *s.QueueMs >= applied {
					queued++
				}
			}
			if tc.cfg.Slots == 1 && queued != tc.parallel-1 {
				t.Errorf("%d requests queued behind a whole response (%.0f ms), want %d", queued, applied, tc.parallel-1)
			}
		})
	}
}
