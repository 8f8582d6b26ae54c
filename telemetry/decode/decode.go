// Package decode interprets the events of an LLM API response (and the request that asked for
// it): which events carry generated content, the token usage the server reported, finish
// reasons, and errors sent inside a stream. Decoders know nothing about time; the meter pairs
// their verdicts with the event times.
package decode

import "time"

// Kind classifies one response event for the metric contract of docs/metrics.md.
type Kind uint8

const (
	// Other is an event with no generated content: role-only deltas, usage-only chunks,
	// keep-alives, comments, lifecycle events.
	Other Kind = iota
	// Content is an event that carries non-empty generated text, tool-call arguments or a
	// refusal (anything that is not only reasoning). It counts for TTFT and TTFO.
	Content
	// Reasoning is an event whose only generated content is reasoning text. It counts for TTFT
	// but not for TTFO.
	Reasoning
	// Done is the end-of-stream sentinel (OpenAI's "[DONE]").
	Done
	// Error is an error object sent inside the stream.
	Error
	// Malformed is an event the decoder could not parse (invalid JSON, unexpected shape).
	Malformed
)

// String returns the lower-case name of the kind.
func (k Kind) String() string {
	switch k {
	case Other:
		return "other"
	case Content:
		return "content"
	case Reasoning:
		return "reasoning"
	case Done:
		return "done"
	case Error:
		return "error"
	case Malformed:
		return "malformed"
	}
	return "unknown"
}

// Usage is the token usage a server reported. A count the server did not report is -1.
type Usage struct {
	InputTokens     int64
	OutputTokens    int64
	ReasoningTokens int64
	CachedTokens    int64
	// CacheWriteTokens is the part of the input the server wrote to its prompt cache
	// (Anthropic's cache_creation_input_tokens); unlike the other counts it is 0, not -1,
	// when the server did not report it, since only some APIs have it.
	CacheWriteTokens int64
}

// ServerTimings is what a server reported about its own work on one response, on top of the
// token usage: Ollama's native API ends every response with the time it spent loading the model,
// evaluating the prompt and generating, measured inside the server; llama.cpp's server puts a
// "timings" object (prompt_ms, predicted_ms) on its last chunk; TGI's /generate sends timing
// headers (x-queue-time, x-inference-time). Set beside the times llmtap measures at the proxy,
// they separate the server's own latency from queueing and transport. A zero field was not
// reported; a zero ServerTimings means the API reports none.
type ServerTimings struct {
	// Format names the shape the timings came in: FormatOllama, FormatLlamaCpp or FormatTGI.
	Format string
	// QueueDuration is the time the request waited before the server worked on it (TGI's
	// x-queue-time); zero when the server does not say.
	QueueDuration time.Duration
	// InferenceDuration is prefill and decode together, for a server that reports only their
	// sum (TGI's x-inference-time).
	InferenceDuration time.Duration
	// PromptEvalCount and EvalCount are the prompt and generated token counts the timings
	// refer to (Ollama's prompt_eval_count and eval_count).
	PromptEvalCount int64
	EvalCount       int64
	// LoadDuration is the time spent loading the model before the request could run.
	LoadDuration time.Duration
	// PromptEvalDuration is the time spent evaluating the prompt (prefill).
	PromptEvalDuration time.Duration
	// EvalDuration is the time spent generating the output tokens (decode).
	EvalDuration time.Duration
	// TotalDuration is the server's whole time on the request, loading included.
	TotalDuration time.Duration
}

// NoUsage is a Usage with every count unknown.
var NoUsage = Usage{InputTokens: -1, OutputTokens: -1, ReasoningTokens: -1, CachedTokens: -1}

// MaxText is the default cap on the generated text a decoder keeps for token counting.
const MaxText = 1 << 20

// Result is what a decoder learned from a whole response.
type Result struct {
	// Model is the model the response named (empty when it named none).
	Model string
	// Usage is the last non-null usage object seen (OpenAI streams may send several).
	Usage Usage
	// HasUsage reports whether any usage object was seen.
	HasUsage bool
	// FinishReason is the finish reason of choice 0 ("stop", "length", "tool_calls",
	// "content_filter", …), empty when none was seen.
	FinishReason string
	// Choices is the number of distinct choice indexes seen (n > 1 requests have several).
	Choices int
	// Finished is the number of distinct choice indexes that sent a finish_reason (the OpenAI
	// decoders; 0 for the others).
	Finished int
	// ContentEvents and ReasoningEvents count the events of each kind.
	ContentEvents   int
	ReasoningEvents int
	// ToolCalls reports whether any tool-call argument delta or tool call was seen.
	ToolCalls bool
	// Refusal reports whether a refusal was seen.
	Refusal bool
	// Text is the generated output text (content and tool-call arguments, all choices, in
	// arrival order), kept up to the decoder's cap for tokenizer counting when the server sends
	// no usage. TextTruncated is set when the cap was reached.
	Text          []byte
	TextTruncated bool
	// ReasoningText is the generated reasoning text, kept under the same cap.
	ReasoningText []byte
	// ErrorType and ErrorMessage describe an error object sent inside the stream or body.
	ErrorType    string
	ErrorMessage string
	// Malformed counts events (or bodies) the decoder could not parse.
	Malformed int
	// Ended reports whether the decoder saw the event that ends a complete response of its API:
	// the event it returned Done for, or a final event that also carried generated text (TGI's
	// last token next to its details, an Ollama "done" line with text) and was returned as
	// Content so that its time counts. A stream of an API for which ExpectsDone is true was cut
	// short when it ended without Done and without Ended. The OpenAI decoders set it while every
	// choice seen has sent its finish_reason: servers that end a stream there without "[DONE]"
	// (Cerebras, Writer, Perplexity, llama.cpp-based servers, TGI before 2.1) sent a whole
	// response. Whether the usage chunk the request asked for came too is the meter's check,
	// since only the request says so.
	Ended bool
	// ServerTimings holds the timings the server reported about its own work (Ollama's native
	// API), zero when it reported none.
	ServerTimings ServerTimings
}

// ResponseDecoder interprets one response. Implementations are not safe for concurrent use; one
// decoder serves one response at a time and may be reused after Reset.
type ResponseDecoder interface {
	// Event classifies one streamed event (an SSE event's data or an NDJSON line) and folds what
	// it carries into the result. typ is the SSE event type (empty for NDJSON and untyped SSE).
	// It must not retain data after returning.
	Event(typ, data []byte) Kind
	// Body interprets a complete non-streaming response body and reports whether it carried
	// generated content.
	Body(body []byte) Kind
	// Result returns the decoder's findings so far. The pointer stays valid until Reset.
	Result() *Result
	// Reset prepares the decoder for another response, keeping its buffers.
	Reset()
}

// Request is what llmtap reads from a request body.
type Request struct {
	// Model is the requested model, empty when the body named none.
	Model string
	// Stream reports whether the client asked for a streamed response.
	Stream bool
	// IncludeUsage reports whether stream_options.include_usage was true.
	IncludeUsage bool
	// MaxTokens is max_completion_tokens, else max_tokens, else -1.
	MaxTokens int64
	// N is the number of choices asked for (1 when absent).
	N int
	// Prompt is the prompt text (message contents joined by "\n", or the completion prompt),
	// kept up to a cap, for counting input tokens when the server reports none.
	Prompt []byte
	// PromptTruncated is set when the body or the prompt exceeded the cap.
	PromptTruncated bool
	// Valid reports whether the body parsed as a JSON object.
	Valid bool
}
