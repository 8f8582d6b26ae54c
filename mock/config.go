package mock

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// UsageMode says when a streamed response carries a usage chunk.
type UsageMode string

const (
	// UsageAuto sends a usage chunk in a stream only when the request asks
	// for it with stream_options.include_usage, as OpenAI and vLLM do.
	// Non-streaming responses always carry usage.
	UsageAuto UsageMode = "auto"
	// UsageAlways sends a usage chunk in every stream, whatever the request
	// says, like servers that ignore stream_options.
	UsageAlways UsageMode = "always"
	// UsageNever never reports usage, in streams or in non-streaming
	// bodies, so a measuring client has to fall back to its tokenizer.
	UsageNever UsageMode = "never"
)

// PromptCounter says how prompt_tokens in the usage report is computed.
type PromptCounter string

const (
	// PromptO200k counts the prompt exactly with tiktoken's o200k_base, the
	// tokenizer AIPerf uses for placeholder models. It costs about 0.6 µs
	// per prompt token (1.6 ms for a 2,600-token prompt on one core) and a
	// one-time 40 ms vocabulary load on the first request.
	PromptO200k PromptCounter = "o200k"
	// PromptApprox estimates the prompt as ceil(bytes/4), which costs
	// nothing; use it when the mock must not be the bottleneck of a
	// benchmark with long prompts and prompt_tokens does not matter.
	PromptApprox PromptCounter = "approx"
)

// Limits that keep one request from using unbounded memory or time.
const (
	// DefaultOutputTokens is the output length when a request sets no
	// max_tokens and Config.OutputTokens is zero.
	DefaultOutputTokens = 64
	// DefaultMaxOutputTokens is the largest max_tokens accepted when
	// Config.MaxOutputTokens is zero.
	DefaultMaxOutputTokens = 32768
	// DefaultLogLimit is how many traces and arrivals are kept when
	// Config.LogLimit is zero.
	DefaultLogLimit = 4096
	// DefaultModel is the model name listed by /v1/models when
	// Config.Model is empty.
	DefaultModel = "mock-model"
	// MaxChoices is the largest n accepted in a request.
	MaxChoices = 128
	// maxJitterCV bounds JitterCV; beyond it the lognormal's tail makes a
	// single gap thousands of times the mean, which is no longer a model
	// of a server but a hang.
	maxJitterCV = 10
)

// Config describes how the mock server answers. The zero Config is valid:
// no delays, 64 output tokens, one token per chunk, no role chunk, usage as
// the request asks, model "mock-model". DefaultConfig returns the realistic
// settings of `llmtap mock` (AIPerf's mock server defaults: TTFT 20 ms, ITL
// 5 ms, a role chunk first).
type Config struct {
	// Model is the model name listed by GET /v1/models. Responses echo the
	// model named in the request, so any model name is accepted; Model is
	// used when the request names none. Default "mock-model".
	Model string

	// TTFT is the time from the request's arrival to the generation of the
	// first output token. With TokensPerChunk 1 it is the time to the first
	// content event. Zero means no delay. It is jittered like every gap
	// when JitterCV is set.
	TTFT time.Duration

	// ITL is the time between the generation of consecutive output tokens.
	// Token i (from 0) is generated at arrival + TTFT + i*ITL, and each
	// event is written at the generation time of its last token; the
	// server sleeps to these absolute deadlines, so late wake-ups do not
	// accumulate into drift. Zero means no delay.
	ITL time.Duration

	// JitterCV is the coefficient of variation of a lognormal factor with
	// mean 1 that multiplies TTFT and every ITL gap independently. The
	// schedule stays absolute: deadlines are the running sum of jittered
	// gaps. Zero means exact gaps; must be in [0, 10].
	JitterCV float64

	// RequestJitterCV is the coefficient of variation of a lognormal factor
	// with mean 1, drawn once per request, that multiplies its TTFT and all
	// of its ITL gaps (before JitterCV's per-gap factor): some requests are
	// served fast and others slow, as on a server whose batch changes, so
	// per-request latencies spread over a distribution instead of
	// clustering around one value. Zero means every request at the same
	// pace; must be in [0, 10].
	RequestJitterCV float64

	// TailFraction is the share of requests, drawn per request, whose TTFT
	// and ITL are multiplied by TailFactor: a server with the same median
	// and a worse tail (a canary that stalls now and then). Zero means
	// none; must be in [0, 1].
	TailFraction float64
	// TailFactor multiplies the TTFT and ITL of the TailFraction of
	// requests; must be at least 1 when TailFraction is set.
	TailFactor float64

	// OutputTokens is the number of tokens generated for a request that
	// sets neither max_tokens nor max_completion_tokens. Reaching it ends
	// the response with finish_reason "stop", as if the model chose to
	// stop. Default 64.
	OutputTokens int

	// MaxOutputTokens is the largest max_tokens (or max_completion_tokens,
	// or min_tokens) a request may ask for; larger values are answered
	// with HTTP 400 as a server answers a request over its context length.
	// It bounds the time and memory of one response. Default 32768.
	MaxOutputTokens int

	// EOSProbability is the probability that each token after min_tokens
	// is the end of the sequence, so outputs end early with finish_reason
	// "stop" at a seeded random point (a geometric length). Requests with
	// ignore_eos, or with min_tokens >= max_tokens, always produce exactly
	// max_tokens. Zero (the default) means every response runs to its
	// token limit. Must be in [0, 1].
	EOSProbability float64

	// TokensPerChunk is the number of tokens carried by one content event,
	// like vLLM's stream interval or a server that batches its output.
	// The last chunk of each phase (reasoning, content) may carry fewer.
	// Default 1.
	TokensPerChunk int

	// Reasoning is the number of reasoning tokens a chat response emits as
	// delta.reasoning_content (message.reasoning_content when not
	// streaming) before its content. They count towards max_tokens and
	// completion_tokens and are reported as
	// completion_tokens_details.reasoning_tokens. Legacy completions never
	// reason. Default 0.
	Reasoning int

	// CachedTokens is how many prompt tokens the usage reports as read from a
	// prompt cache (at most the prompt): OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens.
	// Default 0 (not reported).
	CachedTokens int

	// CacheWriteTokens is how many prompt tokens an Anthropic usage reports as
	// written to the prompt cache (cache_creation_input_tokens), beside
	// CachedTokens and at most the rest of the prompt. Default 0.
	CacheWriteTokens int

	// RoleChunk makes a chat stream start, right after the headers, with a
	// role-only chunk per choice (delta {"role":"assistant","content":""})
	// like vLLM and OpenAI. It is not a content event and must not count
	// towards TTFT.
	RoleChunk bool

	// Usage says when a stream ends with a usage chunk (choices []): one of
	// "auto" (default), "always", "never". See UsageMode.
	Usage UsageMode

	// PromptCounter says how prompt_tokens is computed: "o200k" (default,
	// exact) or "approx" (ceil(bytes/4), free). The prompt is the text of
	// every chat message, or the completions prompt, without any chat
	// template; token-id prompts count their ids.
	PromptCounter PromptCounter

	// ErrorRate is the fraction of requests answered at once with HTTP 500
	// and an OpenAI-style JSON error body. Must be in [0, 1].
	ErrorRate float64

	// StreamErrorRate is the fraction of streaming requests that, after a
	// seeded random number of tokens, send an error event
	// (data: {"error":{...}}) followed by data: [DONE], as vLLM does when
	// generation fails mid-stream. It does not apply to non-streaming
	// requests. Must be in [0, 1].
	StreamErrorRate float64

	// Seed seeds every random choice (errors, EOS points, jitter, words).
	// Request k (in arrival order, from 0) draws from PCG(Seed, k), so a
	// sequential client sees the same responses on every run.
	Seed int64

	// LogEvents keeps a Trace (ground truth) of every finished response in
	// memory, the most recent LogLimit of them, for Traces and TraceByID.
	LogEvents bool

	// LogLimit bounds the in-memory trace log and the arrival log; the
	// oldest entries are dropped and counted in Stats. Default 4096.
	LogLimit int

	// EventLog, when set, receives one JSON line per finished response
	// (the Trace with wall-clock Unix nanoseconds), so that another process
	// can compare its own measurements with the ground truth. Writes are
	// serialised; a failing writer is counted in Stats.EventLogErrors and
	// skipped. It is independent of LogEvents.
	EventLog io.Writer

	// EventLogPath, when set and EventLog is nil, is a file that New
	// creates (mode 0600, appending) and uses as EventLog; Close closes it.
	EventLogPath string

	// Slots is how many requests the mock generates for at once, like a
	// server's batch slots (llama.cpp's --parallel, OLLAMA_NUM_PARALLEL): a
	// request that finds every slot taken waits for one before anything of
	// its response is written, and that wait is its queue time, reported as
	// such (see ServerTimings). Zero means unlimited: no request ever
	// queues. Must not be negative.
	Slots int

	// KVCacheTokens is the KV cache of the mock's capacity model, in tokens: a request holds
	// its prompt tokens from the moment it gets a slot, and each generated token from the
	// moment it is written, until it ends; GET /metrics then reports the tokens held over
	// KVCacheTokens as vllm:kv_cache_usage_perc (a fraction, as vLLM reports it), beside the
	// running (slots in use) and waiting (queued) requests. It reports usage only: a full cache
	// delays nothing, the slots alone queue requests. Zero means no KV-cache gauge on the
	// page. Must not be negative.
	KVCacheTokens int

	// Timings makes the OpenAI routes report the mock's own split of each
	// response the way llama.cpp's server does: a "timings" object
	// (prompt_n, prompt_ms, predicted_n, predicted_ms, …) on the last chunk
	// before data: [DONE] and on non-streaming bodies. The native Ollama
	// routes always report their durations and TGI's /generate its timing
	// headers; GET /metrics always has the histograms. Default false.
	Timings bool

	// TimingsScale multiplies every duration the mock reports about its own
	// work (Ollama's durations, llama.cpp's timings, TGI's headers and the
	// /metrics histograms) without changing the delays it applies: a value
	// other than 1 makes the mock lie about its own time, as a server whose
	// clock or accounting is wrong, for testing what disagrees. Zero means 1
	// (the truth); must not be negative.
	TimingsScale float64

	// LeanHTTP serves HTTP/1.1 with internal/h1server instead of net/http's
	// Server, which costs less CPU per small request (BenchmarkUnaryServers:
	// 75–107 against 97–124 µs per exchange, client and server together): for
	// benchmarks where the mock shares a few cores with the load generator
	// or proxy being measured. A client that disconnects is noticed at the
	// next write rather than at once; h2c clients (prior knowledge) are
	// still served, by golang.org/x/net/http2. Default false (net/http).
	LeanHTTP bool
}

// DefaultConfig returns the settings `llmtap mock` starts with: those of
// AIPerf's mock server (TTFT 20 ms, ITL 5 ms, no jitter, 64 tokens) with a
// role chunk first, as vLLM streams.
func DefaultConfig() Config {
	return Config{
		Model:           DefaultModel,
		TTFT:            20 * time.Millisecond,
		ITL:             5 * time.Millisecond,
		OutputTokens:    DefaultOutputTokens,
		MaxOutputTokens: DefaultMaxOutputTokens,
		TokensPerChunk:  1,
		RoleChunk:       true,
		Usage:           UsageAuto,
		PromptCounter:   PromptO200k,
		LogLimit:        DefaultLogLimit,
	}
}

// Validate reports every invalid field at once. Zero values are valid and
// mean the documented defaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.TTFT < 0 {
		bad("ttft %v: must not be negative", c.TTFT)
	}
	if c.ITL < 0 {
		bad("itl %v: must not be negative", c.ITL)
	}
	if !(c.JitterCV >= 0 && c.JitterCV <= maxJitterCV) { // also rejects NaN
		bad("jitter-cv %v: must be in [0, %d]", c.JitterCV, maxJitterCV)
	}
	if !(c.RequestJitterCV >= 0 && c.RequestJitterCV <= maxJitterCV) {
		bad("request-jitter-cv %v: must be in [0, %d]", c.RequestJitterCV, maxJitterCV)
	}
	if !(c.TailFraction >= 0 && c.TailFraction <= 1) {
		bad("tail-fraction %v: must be in [0, 1]", c.TailFraction)
	}
	if c.TailFraction > 0 && !(c.TailFactor >= 1 && c.TailFactor <= 1e6) {
		bad("tail-factor %v: must be in [1, 1e6] when tail-fraction is set", c.TailFactor)
	}
	if c.OutputTokens < 0 {
		bad("output-tokens %d: must not be negative", c.OutputTokens)
	}
	if c.MaxOutputTokens < 0 {
		bad("max-output-tokens %d: must not be negative", c.MaxOutputTokens)
	}
	if c.OutputTokens > 0 && c.OutputTokens > c.maxOutput() {
		bad("output-tokens %d: above max-output-tokens %d", c.OutputTokens, c.maxOutput())
	}
	if !(c.EOSProbability >= 0 && c.EOSProbability <= 1) {
		bad("eos-probability %v: must be in [0, 1]", c.EOSProbability)
	}
	if c.TokensPerChunk < 0 {
		bad("tokens-per-chunk %d: must not be negative", c.TokensPerChunk)
	}
	if c.Reasoning < 0 {
		bad("reasoning %d: must not be negative", c.Reasoning)
	}
	if c.CachedTokens < 0 || c.CacheWriteTokens < 0 {
		bad("cached tokens %d, cache write tokens %d: must not be negative", c.CachedTokens, c.CacheWriteTokens)
	}
	switch c.Usage {
	case "", UsageAuto, UsageAlways, UsageNever:
	default:
		bad("usage %q: must be auto, always or never", c.Usage)
	}
	switch c.PromptCounter {
	case "", PromptO200k, PromptApprox:
	default:
		bad("prompt-counter %q: must be o200k or approx", c.PromptCounter)
	}
	if !(c.ErrorRate >= 0 && c.ErrorRate <= 1) {
		bad("error-rate %v: must be in [0, 1]", c.ErrorRate)
	}
	if !(c.StreamErrorRate >= 0 && c.StreamErrorRate <= 1) {
		bad("stream-error-rate %v: must be in [0, 1]", c.StreamErrorRate)
	}
	if c.Slots < 0 {
		bad("slots %d: must not be negative", c.Slots)
	}
	if c.KVCacheTokens < 0 {
		bad("kv-cache-tokens %d: must not be negative", c.KVCacheTokens)
	}
	if !(c.TimingsScale >= 0) || math.IsInf(c.TimingsScale, 0) {
		bad("timings-scale %v: must be a finite number, not negative", c.TimingsScale)
	}
	if c.LogLimit < 0 {
		bad("log-limit %d: must not be negative", c.LogLimit)
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default filled in.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	c.MaxOutputTokens = c.maxOutput()
	if c.OutputTokens == 0 {
		c.OutputTokens = min(DefaultOutputTokens, c.MaxOutputTokens)
	}
	if c.TokensPerChunk == 0 {
		c.TokensPerChunk = 1
	}
	if c.Usage == "" {
		c.Usage = UsageAuto
	}
	if c.PromptCounter == "" {
		c.PromptCounter = PromptO200k
	}
	if c.LogLimit == 0 {
		c.LogLimit = DefaultLogLimit
	}
	if c.TimingsScale == 0 {
		c.TimingsScale = 1
	}
	return c
}

func (c Config) maxOutput() int {
	if c.MaxOutputTokens == 0 {
		return DefaultMaxOutputTokens
	}
	return c.MaxOutputTokens
}
