// Package inject makes an OpenAI-compatible server report token usage in a stream the client
// did not ask it for, and hides the report from that client again.
//
// A streaming chat or completions request carries usage only when it sets
// stream_options.include_usage; without it llmtap has to count output tokens with its own
// tokenizer, which for most models is not the model's tokenizer. AddIncludeUsage rewrites such a
// request body so the server appends its usage-only chunk (choices [] with the totals) before
// data: [DONE]; Filter removes that chunk from the bytes sent to the client, so the client reads
// exactly what it would have read had the request gone to the server unchanged, while the meter,
// fed the server's bytes, reads the server's own count.
//
// Filter reads plain SSE only; AcceptEncoding tells the handler whether a client accepts a
// compressed response, so that a rewritten request asks the server for an uncompressed one (or
// is not rewritten when the client refuses identity).
//
// Request wires the two to an HTTP request: AddIncludeUsage to its body and Filter to the
// writer between the host's measuring writer and the client.
package inject
