// Package mock is an OpenAI-compatible mock inference server with a
// known ground truth. It serves chat and legacy completions, streamed as
// Server-Sent Events shaped like vLLM's or as JSON bodies, on a precise
// token schedule: token i of a response is generated at arrival + TTFT +
// i*ITL (optionally jittered), and each event is written at the
// generation time of its last token, sleeping to absolute deadlines.
//
// Every generated word is exactly one o200k_base token, so a tokenizer
// count of the text equals the tokens sent, and every response can be
// recorded as a Trace (the time of each write, taken just before it) in
// memory or as JSON lines. llmtap uses it for `llmtap mock`, the demo,
// benchmarks and accuracy tests: what llmtap measures through a proxy can
// be compared with what the mock actually did.
//
// A typical stream (RoleChunk, include_usage, max_tokens 2):
//
//	data: {"id":"chatcmpl-mock-0","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}
//	data: {"id":"chatcmpl-mock-0","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}
//	data: {"id":"chatcmpl-mock-0","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" river"},"logprobs":null,"finish_reason":null}]}
//	data: {"id":"chatcmpl-mock-0","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}
//	data: {"id":"chatcmpl-mock-0","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
//	data: [DONE]
//
// (Events are separated by blank lines on the wire.)
//
// POST /v1/messages answers Anthropic's Messages API on the same schedule:
// message_start, content_block_start, a content_block_delta (text_delta)
// per chunk, content_block_stop, message_delta with the cumulative
// usage.output_tokens, message_stop; or one message body when not
// streaming.
package mock
