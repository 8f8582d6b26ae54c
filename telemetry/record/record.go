// Package record defines the per-request record: every timestamp and metric of the contract in
// docs/metrics.md for one request, in the shape users read from /llmtap/requests and record files.
package record

import (
	"time"
)

// Traffic classes. Only llmtap itself marks a request as anything but live.
const (
	ClassLive   = "live"
	ClassShadow = "shadow"
	ClassMirror = "mirror"
	ClassReplay = "replay"
	ClassBench  = "bench"
)

// Sources of a token count.
const (
	SourceUsage     = "usage"     // reported by the server
	SourceTokenizer = "tokenizer" // counted by llmtap's tokenizer from the text (see Record.Tokenizer)
	SourceEvents    = "events"    // number of content events, when there was no text to count
	SourceNone      = ""          // no count
)

// Error classes of a request. Empty means the request succeeded.
const (
	ErrHTTP      = "http_status"      // the upstream answered with a status ≥ 400
	ErrStream    = "stream_error"     // an error object arrived inside the stream
	ErrTruncated = "truncated"        // the stream ended inside an event, or without [DONE] where one was due
	ErrCanceled  = "client_canceled"  // the client went away before the response completed
	ErrUpstream  = "upstream_failure" // the proxy could not complete the response (reset, timeout)
	ErrMalformed = "malformed"        // the stream could not be decoded as the API it claimed to be
)

// Values of Record.UsageInjection: what inject_usage did with a request.
const (
	UsageInjected          = "injected"
	UsageInjectedIdentity  = "injected_identity"
	UsageSkippedCompressed = "skipped_compressed"
	UsageUnfilteredEncoded = "unfiltered_encoded"
)

// UnknownModel is the model of a request for which neither the request nor the response
// named one, in records and every label derived from them.
const UnknownModel = "_unknown"

// Record is everything measured about one request. Times are float milliseconds from t0, the
// moment the handler first saw the request; a metric that does not apply (TTFT of a
// non-streaming request, ITL with fewer than two output tokens) is null in JSON.
type Record struct {
	RequestID string `json:"request_id"`
	Class     string `json:"class"`
	// Model is the model the response named, else the one the request named, else
	// UnknownModel: one spelling on every surface (records, summaries, metrics, exports).
	Model    string    `json:"model"`
	Path     string    `json:"path"`
	API      string    `json:"api"`
	Stream   bool      `json:"stream"`
	Status   int       `json:"status"`
	Error    string    `json:"error"`
	ErrorMsg string    `json:"error_message,omitempty"`
	Finish   string    `json:"finish_reason,omitempty"`
	Start    time.Time `json:"start"`
	// SessionID is the value of the header the recorder was told groups a conversation's
	// turns (record's session_header), cut to 256 bytes; empty when none is configured.
	SessionID string `json:"session_id,omitempty"`
	// Tenant is who the request is billed to, from where the handler's tenant option says
	// (a trusted header, a placeholder a verifying module set, or "key:" and a keyed hash of
	// the API key, never the key), at most 128 bytes (longer values are cut and end in "~" and
	// a hash); empty when no tenant option is set or the request carried none.
	Tenant string `json:"tenant,omitempty"`

	HeadersMs        *float64  `json:"headers_ms"`
	TTFTMs           *float64  `json:"ttft_ms"`
	TTFOMs           *float64  `json:"ttfo_ms"`
	TTSTMs           *float64  `json:"ttst_ms"`
	RequestLatencyMs *float64  `json:"request_latency_ms"`
	ITLMs            *float64  `json:"itl_ms"`
	InterChunkMs     []float64 `json:"inter_chunk_ms"`
	// InterChunkDropped counts gaps left out of InterChunkMs once it reached its cap.
	InterChunkDropped int `json:"inter_chunk_dropped,omitempty"`
	// DurationMs is the time from t0 until the exchange ended: the handler returned, after the
	// last byte was written (trailing non-content events included) and the upstream's response
	// was closed, or when the request failed. A client can have the last byte before then.
	DurationMs float64 `json:"duration_ms"`

	InputTokens        int64  `json:"input_tokens"`
	InputTokensSource  string `json:"input_tokens_source"`
	OutputTokens       int64  `json:"output_tokens"`
	OutputTokensSource string `json:"output_tokens_source"`
	ReasoningTokens    int64  `json:"reasoning_tokens"`
	CachedTokens       int64  `json:"cached_tokens"`
	// CacheWriteTokens is the input tokens the server wrote to its prompt cache, when it
	// says so (Anthropic's cache_creation_input_tokens); 0 otherwise.
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// UsageOutputTokens is the server-reported completion token count, -1 when none was sent.
	UsageOutputTokens int64 `json:"usage_output_tokens"`
	// Tokenizer names the tokenizer that counted the token counts whose source is "tokenizer":
	// "o200k_base" (the default) or "hf:NAME" for a tokenizer file. Empty when none counted.
	Tokenizer string `json:"tokenizer,omitempty"`

	// GPU holds the GPU utilization, power and energy share over the request's lifetime;
	// null when no GPU was sampled during it (see GPUUsage).
	GPU *GPUUsage `json:"gpu,omitempty"`
	// Cost is the request's cost by the configured price per GPU-hour (basis "gpu_hour"):
	// its GPU-seconds at that price; null without a price or when no GPU was sampled during it.
	Cost *Cost `json:"cost,omitempty"`
	// ListCost is the request's cost at its model's configured list prices (basis
	// "list_price"): its tokens by kind at the prices per million tokens; null when no list
	// price matches its model. A second figure beside Cost, never summed with it: what the
	// tokens would cost at a provider's prices, against what the GPU time cost.
	ListCost *Cost `json:"list_cost,omitempty"`

	// Server holds the timings the server reported about its own work (Ollama's native API),
	// to set beside the proxy's figures; null when the API reports none.
	Server *ServerTimings `json:"server_timings,omitempty"`

	// Split says where the request's time went: the proxy's part, the upstream's, and the
	// server's queue, prefill and decode where the server reported them (see TimeSplit); null
	// when the request never reached an upstream.
	Split *TimeSplit `json:"time_split,omitempty"`

	ContentEvents int   `json:"content_events"`
	Events        int   `json:"events"`
	Malformed     int   `json:"malformed_events,omitempty"`
	Oversized     int   `json:"oversized_events,omitempty"`
	Choices       int   `json:"choices,omitempty"`
	ToolCalls     bool  `json:"tool_calls,omitempty"`
	Refusal       bool  `json:"refusal,omitempty"`
	Bytes         int64 `json:"bytes"`
	// BytesFromClient is, for a connection upgraded to another protocol (status 101, a
	// WebSocket), the bytes the client sent over it; Bytes is then what it was sent.
	BytesFromClient int64 `json:"bytes_from_client,omitempty"`
	// DecodedBytes is what a gzip- or br-encoded body decoded to, as far as it was decoded
	// for measuring; 0 when the body was not encoded.
	DecodedBytes int64 `json:"decoded_bytes,omitempty"`
	// DecodeStopped says which bound stopped decoding an encoded body before its end: "ratio"
	// (it expanded like a decompression bomb) or "size" (it reached the decoded-size bound);
	// the rest passed to the client unmeasured. Empty when the body decoded to its end.
	DecodeStopped string `json:"decode_stopped,omitempty"`
	// UsageInjection says what inject_usage did with the request: "injected" (include_usage
	// was added and the usage-only chunk is kept from the client), "injected_identity" (the
	// same, and the client's Accept-Encoding, which allowed compression, was replaced by
	// identity, so that the response can be filtered), "skipped_compressed" (the request was
	// left unchanged because its client accepts only compressed responses, which cannot be
	// filtered) or "unfiltered_encoded" (injected, but the server answered content-coded
	// although asked for identity: the response passed unfiltered, usage chunk included).
	// Empty when inject_usage is off or the request is not one it changes.
	UsageInjection string `json:"usage_injection,omitempty"`

	// OutputText and ReasoningText hold what the tokenizer counts until the record is
	// finalized off the request path; RequestBody (the captured request body) and PromptIDs
	// (its prompt's token ids, when the tokenizer counted input_tokens from them: the
	// recorder cuts the trace's hash_ids from them) last until the pipeline's sinks have seen
	// the record. They are never serialized.
	OutputText    []byte `json:"-"`
	ReasoningText []byte `json:"-"`
	RequestBody   []byte `json:"-"`
	PromptIDs     []uint `json:"-"`
	// RequestModel is the model the request body named (Model is the response's when it names
	// one); the OTel export's gen_ai.request.model. It is not serialized: Model is the record's.
	RequestModel string `json:"-"`
}

// ServerTimings are a server's own figures for one response, in float milliseconds, in
// Ollama's names whatever the server: llama.cpp's prompt_n/prompt_ms and
// predicted_n/predicted_ms are prompt_eval_count/prompt_eval_ms and eval_count/eval_ms.
type ServerTimings struct {
	// Format is the shape they were read from: "ollama", "llama.cpp" or "tgi".
	Format string `json:"format,omitempty"`
	// QueueMs and InferenceMs are TGI's x-queue-time and x-inference-time (0 from the others).
	QueueMs         float64 `json:"queue_ms,omitempty"`
	InferenceMs     float64 `json:"inference_ms,omitempty"`
	PromptEvalCount int64   `json:"prompt_eval_count"`
	EvalCount       int64   `json:"eval_count"`
	LoadMs          float64 `json:"load_ms"`
	PromptEvalMs    float64 `json:"prompt_eval_ms"`
	EvalMs          float64 `json:"eval_ms"`
	TotalMs         float64 `json:"total_ms"`
}

// Ms converts a duration to float milliseconds, unrounded.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MsPtr returns a pointer to Ms(d).
func MsPtr(d time.Duration) *float64 { v := Ms(d); return &v }

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Error == "" }

// StatusClass returns the status class label ("2xx", "4xx", …; "000" when no status was sent).
func (r *Record) StatusClass() string {
	switch {
	case r.Status >= 100 && r.Status < 600:
		return string([]byte{byte('0' + r.Status/100), 'x', 'x'})
	}
	return "000"
}
