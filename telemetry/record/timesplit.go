package record

// Sources of a figure of a TimeSplit.
const (
	// SplitServer is a figure the server reported for this very request (Ollama's durations,
	// llama.cpp's timings, TGI's timing headers).
	SplitServer = "server"
	// SplitDerived is computed from figures the server reported for this request: Ollama's
	// queue is its total_duration less load, prompt evaluation and evaluation.
	SplitDerived = "derived"
	// SplitEstimated is not per request: the mean over a timeline window of the server's
	// scraped histograms (vLLM's vllm:request_queue_time_seconds, …). It appears in the
	// timeline's windows, never in a record.
	SplitEstimated = "estimated"
)

// Thresholds of the TTFT disagreement rule (see TimeSplit.TTFTDisagree).
const (
	// DisagreeOverMs absorbs the rounding of servers that report whole milliseconds.
	DisagreeOverMs = 1.0
	// DisagreeUnderMs and DisagreeUnderFrac bound what the network and the server's unreported
	// work (HTTP parsing, tokenization, templating) may add to the server's own TTFT.
	DisagreeUnderMs   = 10.0
	DisagreeUnderFrac = 0.10
)

// TimeSplit says where a request's time went, in float milliseconds: the proxy's side from its
// own clock, the server's side from what the server reported. A figure that is not known is
// null; the server's figures say where each came from.
type TimeSplit struct {
	// ConnectMs is the time spent opening a new upstream connection (dialing, and the TLS
	// handshake when there is one); 0 on a reused connection; null when no upstream
	// connection was obtained.
	ConnectMs *float64 `json:"connect_ms"`
	// ProxyMs is the proxy's own work before forwarding: from t0 until an upstream
	// connection was in hand, less ConnectMs (the handlers before reverse_proxy, its
	// upstream selection, the wait for a connection from the pool).
	ProxyMs *float64 `json:"proxy_ms"`
	// SendMs is from the connection in hand until the request was written whole upstream:
	// for a request with a body, mostly the pace at which the client uploaded it.
	SendMs *float64 `json:"send_ms"`
	// UpstreamHeadersMs is from the request written whole until the upstream's first response
	// byte: one network round trip plus what the server does before it answers.
	UpstreamHeadersMs *float64 `json:"upstream_headers_ms"`
	// UpstreamTTFTMs is TTFT seen from the upstream side: ttft_ms less the moment the proxy
	// had an upstream connection and began to send the request (less nothing when it never
	// had one), before which the server cannot have had it. It is what a server's own TTFT is
	// compared with; it includes SendMs, which a server's clock may or may not cover.
	UpstreamTTFTMs *float64 `json:"upstream_ttft_ms"`

	// QueueMs is the time the server says the request waited before it was worked on
	// (TGI's x-queue-time; Ollama's derived from its totals); QueueSource says where it
	// came from ("server", "derived").
	QueueMs     *float64 `json:"queue_ms"`
	QueueSource string   `json:"queue_source,omitempty"`
	// LoadMs is the time the server spent loading the model for the request (Ollama's
	// load_duration), part of its TTFT.
	LoadMs *float64 `json:"load_ms"`
	// PrefillMs is the server's prompt processing, up to its first token (Ollama's
	// prompt_eval_duration, llama.cpp's prompt_ms); PrefillSource says where it came from.
	PrefillMs     *float64 `json:"prefill_ms"`
	PrefillSource string   `json:"prefill_source,omitempty"`
	// DecodeMs is the server's generation after the first token (Ollama's eval_duration,
	// llama.cpp's predicted_ms); DecodeSource says where it came from.
	DecodeMs     *float64 `json:"decode_ms"`
	DecodeSource string   `json:"decode_source,omitempty"`
	// InferenceMs is prefill and decode together, for a server that reports only their sum
	// (TGI's x-inference-time); PrefillMs and DecodeMs are then null.
	InferenceMs *float64 `json:"inference_ms"`

	// ServerTTFTMs is the server's own TTFT: its queue, load and prefill as reported (those it
	// reports); null when it reports no prefill or the request has no TTFT.
	ServerTTFTMs *float64 `json:"server_ttft_ms"`
	// NetworkMs is UpstreamTTFTMs less ServerTTFTMs: the network both ways, and the server's
	// work before and after its own clock (HTTP parsing, tokenization, templating).
	NetworkMs *float64 `json:"network_ms"`
	// TTFTDisagree flags a request whose server TTFT the proxy cannot reconcile with its own:
	// the server claims more than the time that passed between the proxy starting to send the request
	// and its first token arriving (ServerTTFTMs > UpstreamTTFTMs + 1 ms), or, when the server
	// reports its whole TTFT (its queue included), less than that time by more than the network
	// and its unreported work explain (UpstreamTTFTMs − ServerTTFTMs > 10 ms + 10 % of
	// UpstreamTTFTMs).
	TTFTDisagree bool `json:"ttft_disagree,omitempty"`
}
