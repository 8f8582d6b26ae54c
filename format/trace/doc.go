// Package trace reads and writes LLM request traces: the arrival time, prompt and output
// lengths, prefix-block hashes and (for payload files) the verbatim body of every request of a
// recorded or published workload, so that it can be summarised, converted and replayed.
//
// # Formats
//
// Every reader yields the same [Request]; the format is detected from the first line (a CSV
// header or the keys of the first JSON object) unless [Options.Format] names it.
//
//   - [FormatMooncake]: Mooncake / AIPerf mooncake_trace JSONL, one object per line with
//     "timestamp" (milliseconds), "input_length", "output_length", "hash_ids" and optionally
//     "session_id", "delay" (milliseconds) and "model" (which llmtap's recorder writes; it
//     becomes Request.Model). Timestamps are kept as written.
//   - [FormatRecords]: llmtap's own per-request records (telemetry/record.Record as JSONL).
//     Timestamp is "start" relative to the first line's "start". Records are written when a
//     request completes, so a request that started before the first line's request but finished
//     after it has a negative Timestamp; sort (see [SortByTime]) before replaying. A record's
//     "session_id" becomes SessionID, and a session's later turn gets its Delay from the
//     previous record of the session read (its "start" plus "duration_ms"; see [Sessions]),
//     which is the previous turn when the client waited for each answer.
//   - [FormatPayloads]: llmtap's verbatim request bodies, defined below.
//   - [FormatAzure]: Azure LLM inference traces, CSV "TIMESTAMP,ContextTokens,GeneratedTokens".
//     The 2023 release writes "2023-11-16 18:17:03.9799600" (7 fractional digits, no zone), the
//     2024 release "2024-05-12 00:00:00.001163+00:00" with the fraction omitted on whole
//     seconds; both are read, and a "T" separator or "Z" zone too. Times without a zone are UTC.
//     Timestamp is relative to the first data row.
//   - [FormatBurstGPT]: BurstGPT CSV, with ("Timestamp,Session ID,Elapsed time,Model,…") or
//     without ("Timestamp,Model,Request tokens,Response tokens,…") the session columns.
//     "Timestamp" is seconds from the start of the collection's day 1 and is kept as written;
//     "Response tokens" = 0 marks a failed request; "Elapsed time" (seconds) becomes Latency.
//
// # Payload files
//
// A payload file is JSONL with one line per request, in arrival order:
//
//	{"timestamp_ms": 1523.25, "request_id": "req-42", "path": "/v1/chat/completions",
//	 "input_tokens": 812, "output_tokens": 64, "payload": {"model": "m", "messages": […]}}
//
// "timestamp_ms" (required, ≥ 0) is the arrival time in milliseconds from the start of the
// recording, fractional digits allowed. "payload" (required) is the request body exactly as the
// client sent it, as a JSON object; readers hand it over byte for byte in Request.Payload so a
// replay sends the same body. "request_id", "path" (the request's URL path, default
// "/v1/chat/completions" for a replayer to assume), "input_tokens" and "output_tokens" are
// optional. "session_id" groups the turns of a conversation and "delay_ms" (≥ 0) is a later
// turn's think time, the milliseconds from the end of the previous turn's response to its
// arrival, as Mooncake's "delay" (both optional; they become Request.SessionID and Delay).
// A body that is not valid UTF-8 cannot be JSON text: such a line carries
// "payload_b64", the standard base64 of the body's exact bytes, instead of "payload" (never
// both), and the reader hands over the decoded bytes; when "output_tokens" is absent the reader takes the body's max_completion_tokens or
// max_tokens as OutputLength, and Model is the body's "model". Secrets never belong in a
// payload file: the writer records bodies only, never headers.
//
// # Timestamps and errors
//
// Request.Timestamp is the arrival offset from the trace's own zero: as written for formats
// that store offsets (Mooncake, BurstGPT, payloads), from the first row for formats that store
// wall-clock times (Azure, records). Malformed input is reported as a [*ParseError] that names
// the file, the line and the field. A JSONL file whose last line has no newline and does not
// parse was torn by a crash while being written: the reader stops there without an error and
// reports the line in [Info].Torn. With [Options.SkipBad] other bad lines are skipped and
// counted instead of ending the read.
//
// # Synthetic hash ids
//
// Formats without prefix information (Azure, BurstGPT, records, payloads) get hash ids from a
// [HashSynth] when a consumer needs them (trace convert does): each request receives
// ceil(input/512) fresh ids from a counter, in the order requests are assigned, so the result is
// deterministic and no two requests share a block, which claims no prefix-cache reuse that the
// source did not record. BurstGPT's session ids are not treated as prefix information: whether a
// follow-up turn's prompt contains the previous turn is not stated by the dataset.
package trace
