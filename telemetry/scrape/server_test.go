package scrape

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// histWant is what a test checks of a Histogram: the totals and the
// cumulative count at one bound.
type histWant struct {
	count   uint64
	sum     float64
	bound   float64 // an upper bound on the page
	atBound uint64  // the cumulative count there
	nBounds int     // bounds including +Inf
}

type modelWant struct {
	model                               string
	valid                               ServerField
	kv, running, waiting, hits, queries float64
	prompt, generation                  float64
	ttft, itl, e2e                      histWant
}

const allServerFields = FieldKVCache | FieldRunning | FieldWaiting | FieldPrefixHits |
	FieldPrefixQueries | FieldPromptTokens | FieldGenerationTokens | FieldTTFT | FieldITL | FieldE2E

// knownServerFields are all the fields, the request-phase histograms included (the recorded
// vLLM and SGLang fixtures predate them).
const knownServerFields = allServerFields | FieldQueue | FieldPrefill | FieldDecode

func TestNormalizeFixtures(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		kind    ServerKind
		models  []modelWant
	}{
		{
			name:    "vLLM: two models, one split over two DP engines whose series are added",
			fixture: "vllm.prom",
			kind:    KindVLLM,
			models: []modelWant{
				{
					model: "Qwen/Qwen2.5-0.5B-Instruct", valid: allServerFields,
					queries: 640, prompt: 640, generation: 160,
					ttft: histWant{count: 2, sum: 0.021, bound: 0.01, atBound: 1, nBounds: 23},
					itl:  histWant{count: 10, sum: 0.04, bound: 0.01, atBound: 10, nBounds: 20},
					e2e:  histWant{count: 2, sum: 0.4, bound: 0.3, atBound: 2, nBounds: 22},
				},
				{
					// KV usage is the fuller engine's, not the sum.
					model: "meta-llama/Llama-3.1-8B-Instruct", valid: allServerFields,
					kv: 0.4125, running: 5, waiting: 1, hits: 36864, queries: 99200,
					prompt: 99200, generation: 24320,
					ttft: histWant{count: 9, sum: 0.937, bound: 0.1, atBound: 6, nBounds: 23},
					itl:  histWant{count: 95, sum: 0.48 + 0.36 + 0.39 + 0.13, bound: 0.025, atBound: 90, nBounds: 20},
					e2e:  histWant{count: 9, sum: 15.3, bound: 1, atBound: 2, nBounds: 22},
				},
			},
		},
		{
			name:    "SGLang: cached tokens are hits, prompt tokens stand in for queries",
			fixture: "sglang.prom",
			kind:    KindSGLang,
			models: []modelWant{{
				model: "Qwen/Qwen2.5-7B-Instruct", valid: allServerFields,
				kv: 0.27, running: 7, waiting: 2, hits: 75030, queries: 183000,
				prompt: 183000, generation: 42100,
				ttft: histWant{count: 5, sum: 2.58, bound: 0.4, atBound: 3, nBounds: 19},
				itl:  histWant{count: 60, sum: 0.59, bound: 0.01, atBound: 50, nBounds: 24},
				e2e:  histWant{count: 5, sum: 12.6, bound: 1, atBound: 1, nBounds: 20},
			}},
		},
		{
			name:    "TGI: one unnamed model, no TTFT, KV or prefix cache; tokens from length histogram sums",
			fixture: "tgi.prom",
			kind:    KindTGI,
			models: []modelWant{{
				model: "", valid: FieldRunning | FieldWaiting | FieldPromptTokens | FieldGenerationTokens | FieldITL | FieldE2E | FieldQueue,
				running: 8, waiting: 3, prompt: 3814, generation: 382,
				itl: histWant{count: 4, sum: 0.084, bound: 0.0001 * math.Pow(1.5, 13), atBound: 1, nBounds: 36},
				e2e: histWant{count: 4, sum: 7.95, bound: 0.0001 * math.Pow(1.5, 24), atBound: 2, nBounds: 36},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := ParsePage(bytes.NewReader(readFixture(t, tt.fixture)), 0)
			if err != nil {
				t.Fatal(err)
			}
			got := Normalize(fams)
			if got.Kind != tt.kind {
				t.Fatalf("Kind = %q, want %q", got.Kind, tt.kind)
			}
			if len(got.Models) != len(tt.models) {
				t.Fatalf("got %d models, want %d: %+v", len(got.Models), len(tt.models), got.Models)
			}
			for i, w := range tt.models {
				checkModel(t, &got.Models[i], w)
			}
		})
	}
}

func checkModel(t *testing.T, m *ModelMetrics, w modelWant) {
	t.Helper()
	if m.Model != w.model {
		t.Errorf("Model = %q, want %q", m.Model, w.model)
	}
	if m.Valid != w.valid {
		t.Errorf("%s: Valid = %#x, want %#x", w.model, m.Valid, w.valid)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"KVCacheUsage", m.KVCacheUsage, w.kv},
		{"Running", m.Running, w.running},
		{"Waiting", m.Waiting, w.waiting},
		{"PrefixCacheHits", m.PrefixCacheHits, w.hits},
		{"PrefixCacheQueries", m.PrefixCacheQueries, w.queries},
		{"PromptTokens", m.PromptTokens, w.prompt},
		{"GenerationTokens", m.GenerationTokens, w.generation},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s: %s = %v, want %v", w.model, c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		got  Histogram
		want histWant
	}{{"TTFT", m.TTFT, w.ttft}, {"ITL", m.ITL, w.itl}, {"E2E", m.E2E, w.e2e}} {
		checkHist(t, w.model+" "+c.name, c.got, c.want)
	}
}

func checkHist(t *testing.T, what string, h Histogram, w histWant) {
	t.Helper()
	if h.Count != w.count || !near(h.Sum, w.sum) || len(h.UpperBounds) != w.nBounds {
		t.Errorf("%s: count %d sum %v bounds %d, want %d %v %d", what, h.Count, h.Sum, len(h.UpperBounds), w.count, w.sum, w.nBounds)
		return
	}
	if len(h.Cumulative) != len(h.UpperBounds) {
		t.Errorf("%s: %d counts for %d bounds", what, len(h.Cumulative), len(h.UpperBounds))
		return
	}
	if w.nBounds == 0 {
		return
	}
	if !math.IsInf(h.UpperBounds[len(h.UpperBounds)-1], 1) || h.Cumulative[len(h.Cumulative)-1] != h.Count {
		t.Errorf("%s: last bucket (%v, %d) is not +Inf holding the count", what, h.UpperBounds[len(h.UpperBounds)-1], h.Cumulative[len(h.Cumulative)-1])
	}
	for i, b := range h.UpperBounds {
		if near(b, w.bound) {
			if h.Cumulative[i] != w.atBound {
				t.Errorf("%s: cumulative at le=%v is %d, want %d", what, b, h.Cumulative[i], w.atBound)
			}
			return
		}
	}
	t.Errorf("%s: no bucket at le=%v", what, w.bound)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestDetectKind(t *testing.T) {
	tests := []struct {
		name string
		page string
		want ServerKind
	}{
		{"no known prefix", "process_cpu_seconds_total 1\n", KindUnknown},
		{"empty page", "", KindUnknown},
		{"a vLLM name among process metrics", "process_cpu_seconds_total 1\nvllm:num_requests_running 0\n", KindVLLM},
		{"TGI page carrying one stray sglang series goes to the majority", "tgi_queue_size 0\ntgi_batch_current_size 1\nsglang:num_queue_reqs 0\n", KindTGI},
		{"a name merely containing a prefix does not count", "my_vllm:thing 1\n", KindUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := ParsePage(bytes.NewReader([]byte(tt.page)), 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := DetectKind(fams); got != tt.want {
				t.Fatalf("DetectKind = %q, want %q", got, tt.want)
			}
			if sm := Normalize(fams); tt.want == KindUnknown && len(sm.Models) != 0 {
				t.Fatalf("unknown page produced models %+v", sm.Models)
			}
		})
	}
}

func TestNormalizeEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		page  string
		check func(t *testing.T, m []ModelMetrics)
	}{
		{
			name: "V0 KV gauge is read when the V1 name is absent",
			page: "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n",
			check: func(t *testing.T, m []ModelMetrics) {
				if len(m) != 1 || !m[0].Has(FieldKVCache) || m[0].KVCacheUsage != 0.5 {
					t.Fatalf("%+v", m)
				}
			},
		},
		{
			name: "V1 KV gauge wins over the V0 alias when both are present",
			page: "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n",
			check: func(t *testing.T, m []ModelMetrics) {
				if len(m) != 1 || m[0].KVCacheUsage != 0.25 {
					t.Fatalf("%+v", m)
				}
			},
		},
		{
			name: "NaN gauge leaves the field invalid rather than zero",
			page: "vllm:num_requests_running{model_name=\"m\"} NaN\nvllm:num_requests_waiting{model_name=\"m\"} 0\n",
			check: func(t *testing.T, m []ModelMetrics) {
				if len(m) != 1 || m[0].Has(FieldRunning) || !m[0].Has(FieldWaiting) {
					t.Fatalf("Valid = %#x", m[0].Valid)
				}
			},
		},
		{
			name: "histogram series with different bounds are not added bucket-wise",
			page: "# TYPE vllm:e2e_request_latency_seconds histogram\n" +
				"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"1\"} 1\n" +
				"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"+Inf\"} 2\n" +
				"vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 3\n" +
				"vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 2\n" +
				"vllm:e2e_request_latency_seconds_bucket{engine=\"1\",model_name=\"m\",le=\"2\"} 5\n" +
				"vllm:e2e_request_latency_seconds_bucket{engine=\"1\",model_name=\"m\",le=\"+Inf\"} 5\n" +
				"vllm:e2e_request_latency_seconds_sum{engine=\"1\",model_name=\"m\"} 6\n" +
				"vllm:e2e_request_latency_seconds_count{engine=\"1\",model_name=\"m\"} 5\n",
			check: func(t *testing.T, m []ModelMetrics) {
				if len(m) != 1 || !m[0].Has(FieldE2E) || m[0].E2E.Count != 2 || m[0].E2E.Sum != 3 {
					t.Fatalf("%+v", m)
				}
			},
		},
		{
			name: "a histogram-named series declared as a gauge is ignored, not misread",
			page: "vllm:time_to_first_token_seconds{model_name=\"m\"} 4\n",
			check: func(t *testing.T, m []ModelMetrics) {
				if len(m) != 1 || m[0].Has(FieldTTFT) {
					t.Fatalf("%+v", m)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := ParsePage(bytes.NewReader([]byte(tt.page)), 0)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, Normalize(fams).Models)
		})
	}
}

func TestServerScraper(t *testing.T) {
	url, client := servePage(t, readFixture(t, "sglang.prom"))
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := NewServerScraper(url, Options{Client: client, Now: func() time.Time { return at }})
	sm, err := s.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sm.Kind != KindSGLang || !sm.Time.Equal(at) || len(sm.Models) != 1 || sm.Models[0].Running != 7 {
		t.Fatalf("got %+v", sm)
	}
}

// TestRequestPhaseHistograms reads vLLM's queue, prefill and decode histograms (as the mock's
// /metrics page and vLLM's V1 engine name them) and SGLang's queue histogram.
func TestRequestPhaseHistograms(t *testing.T) {
	page := func(label string, names ...string) string {
		var b strings.Builder
		for i, n := range names {
			fmt.Fprintf(&b, "# TYPE %s histogram\n%s_bucket{le=\"0.3\",%s=\"m\"} %d\n%s_bucket{le=\"+Inf\",%s=\"m\"} %d\n%s_sum{%s=\"m\"} %g\n%s_count{%s=\"m\"} %d\n",
				n, n, label, i+1, n, label, i+2, n, label, 0.5*float64(i+1), n, label, i+2)
		}
		return b.String()
	}
	for _, tc := range []struct {
		page   string
		valid  ServerField
		counts [3]uint64
	}{
		{page("model_name", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds"),
			FieldQueue | FieldPrefill | FieldDecode, [3]uint64{2, 3, 4}},
		{page("model_name", "sglang:queue_time_seconds"), FieldQueue, [3]uint64{2, 0, 0}},
	} {
		fams, err := ParsePage(strings.NewReader(tc.page), 0)
		if err != nil {
			t.Fatal(err)
		}
		sm := Normalize(fams)
		if len(sm.Models) != 1 {
			t.Fatalf("%d models from\n%s", len(sm.Models), tc.page)
		}
		m := sm.Models[0]
		if m.Valid != tc.valid || m.Queue.Count != tc.counts[0] || m.Prefill.Count != tc.counts[1] || m.Decode.Count != tc.counts[2] || m.Queue.Sum != 0.5 {
			t.Errorf("valid %#x, counts %d/%d/%d, queue sum %v; want %#x, %v, 0.5", m.Valid, m.Queue.Count, m.Prefill.Count, m.Decode.Count, m.Queue.Sum, tc.valid, tc.counts)
		}
	}
}
