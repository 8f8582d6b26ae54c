package scrape

import (
	"context"
	"time"
)

// ServerKind is the inference server a /metrics page came from, detected
// from its metric name prefixes.
type ServerKind string

// The servers whose metrics ServerMetrics understands.
const (
	KindUnknown ServerKind = ""
	KindVLLM    ServerKind = "vllm"   // names "vllm:*"
	KindSGLang  ServerKind = "sglang" // names "sglang:*"
	KindTGI     ServerKind = "tgi"    // names "tgi_*"
)

// ServerField names one value of [ModelMetrics]. A bit is set in
// [ModelMetrics.Valid] only when the page carried a series for it, because
// servers differ in what they export (TGI has no TTFT histogram and no KV
// cache gauge) and a missing value must not read as zero.
type ServerField uint16

// The fields of ModelMetrics.
const (
	FieldKVCache          ServerField = 1 << iota // KVCacheUsage
	FieldRunning                                  // Running
	FieldWaiting                                  // Waiting
	FieldPrefixHits                               // PrefixCacheHits
	FieldPrefixQueries                            // PrefixCacheQueries
	FieldPromptTokens                             // PromptTokens
	FieldGenerationTokens                         // GenerationTokens
	FieldTTFT                                     // TTFT
	FieldITL                                      // ITL
	FieldE2E                                      // E2E
	FieldQueue                                    // Queue
	FieldPrefill                                  // Prefill
	FieldDecode                                   // Decode
)

// Histogram is a classic Prometheus histogram as the server exposed it:
// cumulative counts per upper bound (the +Inf bucket included when the page
// had it), the sum of observations and their count. Counters are since the
// server started; rates come from differences between scrapes.
type Histogram struct {
	UpperBounds []float64 `json:"upper_bounds"`
	Cumulative  []uint64  `json:"cumulative"`
	Sum         float64   `json:"sum"`
	Count       uint64    `json:"count"`
}

// ModelMetrics is one model's server-side view, normalized across servers.
// Counters are cumulative since the server started, as exposed.
//
// Which source series fills which field:
//
//	field               vLLM                                   SGLang                              TGI
//	KVCacheUsage        vllm:kv_cache_usage_perc               sglang:token_usage                  –
//	                    (V0: vllm:gpu_cache_usage_perc)
//	Running             vllm:num_requests_running              sglang:num_running_reqs             tgi_batch_current_size
//	Waiting             vllm:num_requests_waiting              sglang:num_queue_reqs               tgi_queue_size
//	PrefixCacheHits     vllm:prefix_cache_hits_total           sglang:cached_tokens_total          –
//	                    (V0: vllm:gpu_prefix_cache_hits_total)
//	PrefixCacheQueries  vllm:prefix_cache_queries_total        sglang:prompt_tokens_total          –
//	                    (V0: vllm:gpu_prefix_cache_queries_total)
//	PromptTokens        vllm:prompt_tokens_total               sglang:prompt_tokens_total          tgi_request_input_length (histogram sum)
//	GenerationTokens    vllm:generation_tokens_total           sglang:generation_tokens_total      tgi_request_generated_tokens (histogram sum)
//	TTFT                vllm:time_to_first_token_seconds       sglang:time_to_first_token_seconds  –
//	ITL                 vllm:inter_token_latency_seconds       sglang:inter_token_latency_seconds  tgi_request_mean_time_per_token_duration
//	                    (old: vllm:time_per_output_token_seconds)
//	E2E                 vllm:e2e_request_latency_seconds       sglang:e2e_request_latency_seconds  tgi_request_duration
//	Queue               vllm:request_queue_time_seconds        sglang:queue_time_seconds           tgi_request_queue_duration
//	Prefill             vllm:request_prefill_time_seconds      –                                   –
//	Decode              vllm:request_decode_time_seconds       –                                   –
//
// Both prefix-cache counters count tokens, so hit rate is
// Δhits/Δqueries for every server; SGLang has no queries counter of its
// own, and every prompt token is looked up in its radix cache, so its
// prompt token counter stands in. The series are grouped by the
// "model_name" label (TGI has none and yields one entry with Model "").
// Series of one model that differ in other labels (vLLM's "engine" under
// data parallelism, SGLang's "tp_rank") are combined: counters, request
// counts and histograms are added, and KV cache usage takes the maximum,
// since the fullest engine is the one that starts queueing.
type ModelMetrics struct {
	Model string `json:"model"`
	// KVCacheUsage is the fraction (0–1) of KV cache blocks in use.
	KVCacheUsage float64 `json:"kv_cache_usage"`
	// Running and Waiting are requests being decoded and queued.
	Running float64 `json:"running"`
	Waiting float64 `json:"waiting"`
	// PrefixCacheHits and PrefixCacheQueries are token counters.
	PrefixCacheHits    float64 `json:"prefix_cache_hits"`
	PrefixCacheQueries float64 `json:"prefix_cache_queries"`
	// PromptTokens and GenerationTokens are token counters.
	PromptTokens     float64 `json:"prompt_tokens"`
	GenerationTokens float64 `json:"generation_tokens"`
	// TTFT, ITL and E2E are the server's latency histograms, in seconds.
	// The server measures from its own arrival time, so they exclude the
	// network and proxy time llmtap sees.
	TTFT Histogram `json:"ttft"`
	ITL  Histogram `json:"itl"`
	E2E  Histogram `json:"e2e"`
	// Queue, Prefill and Decode split the server's requests into the time they waited, their
	// prompt processing and their generation, in seconds, one observation per finished
	// request: the estimates of a request's split where the server reports none per request.
	Queue   Histogram `json:"queue"`
	Prefill Histogram `json:"prefill"`
	Decode  Histogram `json:"decode"`
	// Valid has a bit for every field the page carried.
	Valid ServerField `json:"valid"`
}

// Has reports whether every field in f was on the page.
func (m *ModelMetrics) Has(f ServerField) bool { return m.Valid&f == f }

// ServerMetrics is one scrape of an inference server's /metrics page.
type ServerMetrics struct {
	// Kind is the server detected from the metric names; KindUnknown when
	// the page had none of the known prefixes (Models is then empty).
	Kind ServerKind `json:"kind"`
	// Time is when the scrape began.
	Time time.Time `json:"time"`
	// Models has one entry per model label value, sorted by name.
	Models []ModelMetrics `json:"models"`
}

// ServerScraper scrapes one inference server's /metrics page. It is safe
// for concurrent use if Options.Client is.
type ServerScraper struct {
	url  string
	opts Options
}

// NewServerScraper returns a scraper for url, for example
// "http://127.0.0.1:8000/metrics".
func NewServerScraper(url string, opts Options) *ServerScraper {
	return &ServerScraper{url: url, opts: opts.withDefaults()}
}

// Scrape fetches and normalizes the page once.
func (s *ServerScraper) Scrape(ctx context.Context) (ServerMetrics, error) {
	now := s.opts.Now()
	fams, err := Fetch(ctx, s.url, s.opts)
	if err != nil {
		return ServerMetrics{}, err
	}
	sm := Normalize(fams)
	sm.Time = now
	return sm, nil
}
