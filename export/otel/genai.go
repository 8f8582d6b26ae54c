// Package otel exports what llmtap measures through OpenTelemetry: request records become
// the GenAI semantic-convention histograms (with the bucket boundaries the conventions
// recommend) and, when tracing is on, one span per request; GPU samples become the hardware
// conventions' hw.gpu.*, hw.power and hw.energy instruments. It depends on the OTel metric and
// trace APIs and takes its providers as parameters; FromEnv builds SDK providers from the
// standard OTEL_* environment for the binary. It is the only package of llmtap that touches
// the OTel SDK, and it knows nothing of Caddy.
package otel

import (
	"strings"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Instrument names, units and recommended bucket boundaries of the OpenTelemetry GenAI
// semantic conventions (gen-ai-metrics.md, semconv v1.41; the server metrics are unchanged in
// open-telemetry/semantic-conventions-genai).
const (
	MetricClientOperationDuration  = "gen_ai.client.operation.duration"
	MetricClientTokenUsage         = "gen_ai.client.token.usage"
	MetricClientTimeToFirstChunk   = "gen_ai.client.operation.time_to_first_chunk"
	MetricClientTimePerOutputChunk = "gen_ai.client.operation.time_per_output_chunk"
	MetricServerRequestDuration    = "gen_ai.server.request.duration"
	MetricServerTimeToFirstToken   = "gen_ai.server.time_to_first_token"
	MetricServerTimePerOutputToken = "gen_ai.server.time_per_output_token"

	unitSeconds         = "s"
	unitTokens          = "{token}"
	attrClass           = "llmtap.class"
	attrOperation       = "gen_ai.operation.name"
	attrProvider        = "gen_ai.provider.name"
	attrRequestModel    = "gen_ai.request.model"
	attrResponseModel   = "gen_ai.response.model"
	attrTokenType       = "gen_ai.token.type"
	attrErrorType       = "error.type"
	attrFinishReasons   = "gen_ai.response.finish_reasons"
	attrUsageInput      = "gen_ai.usage.input_tokens"
	attrUsageOutput     = "gen_ai.usage.output_tokens"
	attrUsageReasoning  = "gen_ai.usage.reasoning.output_tokens"
	attrUsageCacheRead  = "gen_ai.usage.cache_read.input_tokens"
	attrUsageCacheWrite = "gen_ai.usage.cache_creation.input_tokens"
	attrTenant          = "llmtap.tenant"
	attrRequestStream   = "gen_ai.request.stream"
	attrResponseTTFC    = "gen_ai.response.time_to_first_chunk"
	attrServerAddress   = "server.address"
	attrServerPort      = "server.port"
	attrHTTPStatus      = "http.response.status_code"
	attrRequestID       = "llmtap.request_id"
	attrAPI             = "llmtap.api"
	attrTokenSource     = "llmtap.output_tokens.source"
	eventFirstToken     = "first_token"
	defaultOperation    = "chat"
	defaultProvider     = "_OTHER"
	defaultModel        = record.UnknownModel
)

// Bucket boundaries the GenAI conventions recommend (ExplicitBucketBoundaries advisory).
var (
	// DurationBuckets are for gen_ai.client.operation.duration, time_to_first_chunk,
	// time_per_output_chunk and gen_ai.server.request.duration.
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// TTFTBuckets are for gen_ai.server.time_to_first_token.
	TTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	// TPOTBuckets are for gen_ai.server.time_per_output_token.
	TPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	// TokenBuckets are for gen_ai.client.token.usage.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// Operation returns the gen_ai.operation.name of a decoded API: "chat" for the chat-style APIs
// (OpenAI chat and Responses, Anthropic messages, Ollama chat), "text_completion" for prompt
// completion APIs, "embeddings" for embeddings, and "chat" for an API llmtap could not name
// (most unrecognized LLM traffic is chat).
func Operation(api string) string {
	switch api {
	case decode.APIOpenAIChat, decode.APIOpenAIResponses, decode.APIAnthropicMessages, decode.APIOllamaChat:
		return "chat"
	case decode.APIOpenAICompletions, decode.APIOllamaGenerate, decode.APITGIGenerate:
		return "text_completion"
	case decode.APIEmbeddings:
		return "embeddings"
	case decode.APIRerank:
		return "rerank"
	}
	return defaultOperation
}

// Provider returns the gen_ai.provider.name of a decoded API: the family that defines the
// wire format ("openai", "anthropic", "ollama", "tgi"), since a proxy sees the API spoken, not
// who runs the server behind it; "_OTHER" when the API is unknown.
func Provider(api string) string {
	switch api {
	case decode.APIUnknown, "":
		return defaultProvider
	case decode.APIRerank:
		return defaultProvider
	}
	if i := strings.IndexByte(api, '.'); i > 0 {
		return api[:i]
	}
	return api
}
