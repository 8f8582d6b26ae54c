package llmtap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// splitCase is one server shape of TestTimeSplitThroughCaddy.
type splitCase struct {
	name   string
	cfg    mock.Config
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
// is at least the TTFT the mock applied; a request sent while another held the mock's one slot
// reports a queue, the other none. When the mock lies (TimingsScale), the disagreement flag is set:
// three times its TTFT is more than the proxy saw unless the proxy's own path took twice the
// TTFT (200 ms), a fifth of it less than the proxy saw by 80 % of the proxy's figure, whatever
// the proxy's path took. (That an honest server is not flagged depends on how busy the machine
// is: TestSplitRule checks the rule's arithmetic, and causal checks the direction that cannot
// depend on it.)
func TestTimeSplitThroughCaddy(t *testing.T) {
	const ttft, itl, tokens = 100 * time.Millisecond, 5 * time.Millisecond, 8
	base := mock.Config{TTFT: ttft, ITL: itl, PromptCounter: mock.PromptApprox, LogEvents: true}
	with := func(f func(*mock.Config)) mock.Config { c := base; f(&c); return c }
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
			name: "ollama chat, queued", cfg: with(func(c *mock.Config) { c.Slots = 1 }),
			path: "/api/chat", body: ollamaChat("m", tokens, true), stream: true, parallel: 2,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server == nil || r.Server.Format != "ollama" || s.PrefillSource != record.SplitServer ||
					s.DecodeSource != record.SplitServer || s.QueueSource != record.SplitDerived || s.LoadMs == nil {
					t.Fatalf("sources: server %+v, split %+v", r.Server, s)
				}
				causal(t, r, s)
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
			name: "llama.cpp timings", cfg: with(func(c *mock.Config) { c.Timings = true }),
			path: "/v1/chat/completions", body: string(chatBody("m", tokens, true, false)), stream: true, parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if r.Server == nil || r.Server.Format != "llama.cpp" || s.PrefillSource != record.SplitServer || s.QueueMs != nil {
					t.Fatalf("sources: server %+v, split %+v", r.Server, s)
				}
				causal(t, r, s)
			},
		},
		{
			name: "tgi generate headers, queued", cfg: with(func(c *mock.Config) { c.Slots = 1 }),
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
			name: "llama.cpp lies high", cfg: with(func(c *mock.Config) { c.Timings, c.TimingsScale = true, 3 }),
			path: "/v1/chat/completions", body: string(chatBody("m", tokens, true, false)), stream: true, parallel: 1,
			check: func(t *testing.T, r record.Record, s *record.TimeSplit) {
				if !s.TTFTDisagree {
					t.Errorf("server TTFT %.3f ms, three times the truth, against %.3f ms at the proxy: not flagged", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
				}
			},
		},
		{
			name: "ollama lies low", cfg: with(func(c *mock.Config) { c.TimingsScale = 0.2 }),
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
				if i > 0 {
					// Request i is sent once the one before holds the mock's slot, and waited for
					// until it queues behind it: queueing by causality, not by timing.
					waitGauge(t, up, "vllm:num_requests_running", 1)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, body, err := testkit.PostJSON(context.Background(), c, p.sites[0]+tc.path, fmt.Sprintf("%s-%d", prefix, i), []byte(tc.body))
					if err != nil || resp.StatusCode != 200 {
						t.Errorf("request %d: %v %v: %s", i, err, resp, body)
					}
				}()
				if i > 0 {
					waitGauge(t, up, "vllm:num_requests_waiting", 1)
				}
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
				if s.QueueMs != nil && *s.QueueMs > 0 {
					queued++
					if i == 0 {
						t.Errorf("the first request, which found the slot free, reports a queue of %.3f ms", *s.QueueMs)
					}
				}
			}
			if tc.cfg.Slots == 1 && queued != tc.parallel-1 {
				t.Errorf("%d requests report a queue, want %d (each waited for the one before)", queued, tc.parallel-1)
			}
		})
	}
}

// TestTimelineEstimatesSplit scrapes the mock's vLLM-style /metrics page while requests in the
// vLLM shape (no per-request split in the responses) pass through Caddy: the timeline's windows
// carry the server's queue, prefill and decode from its histograms, and over all windows they
// account for every request the mock finished, with the very sums the mock's page holds, and
// with a prefill no shorter than the TTFT the mock applied. One slot makes requests queue (as
// far as they arrive together).
func TestTimelineEstimatesSplit(t *testing.T) {
	const n, ttft = 6, 40 * time.Millisecond
	up := startUpstream(t, mock.Config{TTFT: ttft, ITL: 2 * time.Millisecond, Slots: 1, PromptCounter: mock.PromptApprox})
	metrics := "http://" + up.addr + "/metrics"
	// Windows of 1 s, scrapes every 100 ms: a window's increase counts from the previous
	// window's last scrape, so a window without any scrape (a stall of a second) would lose
	// observations.
	p, _ := loadProxy(t, fmt.Sprintf("llmtap {\n\t\tscrape %s {\n\t\t\tkind vllm\n\t\t\tinterval 100ms\n\t\t}\n\t\ttimeline {\n\t\t\twindow 1s\n\t\t}\n\t}", metrics),
		proxySite(up.addr, ""))
	type doc struct {
		Windows []timeline.Window `json:"windows"`
	}
	servers := func() []timeline.Server {
		var d doc
		if err := json.Unmarshal(p.adminGet(t, "/llmtap/timeline"), &d); err != nil {
			t.Fatal(err)
		}
		var out []timeline.Server
		for _, w := range d.Windows {
			out = append(out, w.Servers...)
		}
		return out
	}
	// The first scrape is the base the histograms' increases are counted from.
	for deadline := time.Now().Add(10 * time.Second); len(servers()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the mock's page never reached the timeline")
		}
	}
	c := newClient(t)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body, err := testkit.PostJSON(context.Background(), c, p.sites[0]+"/v1/chat/completions", fmt.Sprintf("%s-%d", ownName("est"), i), chatBody("m", 4, true, false))
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("request %d: %v: %s", i, err, body)
			}
		}()
	}
	wg.Wait()
	// The mock's own sums, which the windows' increases must add up to.
	page := scrapePage(t, metrics)
	var count uint64
	var sums [3]float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		count, sums = 0, [3]float64{}
		for _, sv := range servers() {
			for k, l := range []*timeline.ServerLatency{sv.QueueMs, sv.PrefillMs, sv.DecodeMs} {
				if l == nil {
					continue
				}
				sums[k] += l.Mean * float64(l.Count)
				if k == 1 {
					count += l.Count
				}
			}
			if sv.Split != nil {
				if s := sv.Split.Queue + sv.Split.Prefill + sv.Split.Decode; s < 0.999999 || s > 1.000001 {
					t.Errorf("shares %+v sum to %v", *sv.Split, s)
				}
			}
		}
		if count >= n || time.Now().After(deadline) {
			break
		}
	}
	if count != n {
		t.Fatalf("the windows' prefill histograms counted %d requests, want %d", count, n)
	}
	for k, name := range []string{"queue", "prefill", "decode"} {
		want := page["vllm:request_"+name+"_time_seconds_sum"] * 1e3
		if d := sums[k] - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: the windows add up to %.6f ms, the mock's page says %.6f ms", name, sums[k], want)
		}
	}
	if sums[1]/n < record.Ms(ttft) {
		t.Errorf("mean prefill %.3f ms < the TTFT %v the mock applied", sums[1]/n, ttft)
	}
}

// waitGauge waits (bounded) until the mock's /metrics page shows gauge at want.
func waitGauge(t *testing.T, up *upstream, gauge string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); scrapePage(t, "http://"+up.addr+"/metrics")[gauge] != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the mock's %s never reached %v", gauge, want)
		}
	}
}

// scrapePage reads a Prometheus text page into sample values by name (the label set dropped:
// the mock's page has one model).
func scrapePage(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, rest, _ := strings.Cut(l, "{")
		_, v, _ := strings.Cut(rest, "} ")
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && !strings.Contains(name, "_bucket") {
			out[name] = f
		}
	}
	return out
}
