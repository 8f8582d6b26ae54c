// Package recorder writes the requests llmtap measured to disk, off the request path, as files
// that format/trace reads back for summaries, conversion and replay.
//
// A Recorder is a sink of the record pipeline. Submit never blocks: it filters (routes,
// models, sampling), then hands the record to a queue bounded in records (Options.Queue) and
// in the bytes of the request bodies it holds (Options.QueueBytes), and counts a drop when the
// queue is full. A body that does not fit the byte bound is not kept: the record's records line
// is still written, its trace and payload lines are left out and counted (Stats.Shed), so a
// writer that falls behind (tokenizing long prompts for the trace) loses counted trace rows,
// never grows memory. One writer goroutine owns every file: it encodes lines, writes them through a
// buffer, flushes the buffer to the operating system at least every Options.FlushEvery (so a
// crash of the process loses at most that much), rotates files by size and age, and fsyncs on
// rotation and Close.
//
// [Beside] writes lines of another part of llmtap (the timeline's windows) into files of their
// own kind beside the recordings, rotated by the same rule as each folder's recorder.
//
// # Files
//
// One folder, one file per kind at a time, named <kind>-<UTC start>.jsonl (for example
// trace-20260514T101502.123Z.jsonl, with -1, -2 … appended when the name is taken), created
// 0600 in a folder created 0700:
//
//   - records: the per-request record (telemetry/record.Record) as JSON, one per line, the
//     same fields GET /llmtap/requests serves.
//   - trace: AIPerf / Mooncake mooncake_trace JSONL: "timestamp" (arrival, milliseconds from
//     the file's start), "input_length", "output_length", "hash_ids", then "session_id" when the
//     request carried one, "delay" for a session's later turns (see Sessions) and "model".
//   - payloads (opt-in): the payload format of format/trace: "timestamp_ms" (as the trace's
//     timestamp), "request_id", "path", "input_tokens", "output_tokens", "session_id" and
//     "delay_ms" (the trace's session fields), and "payload", the request body as the client
//     sent it (whitespace between JSON tokens removed so it fits one line), after the
//     redaction rules; a body that is not valid UTF-8 is written as "payload_b64",
//     the base64 of its exact bytes, so every line stays valid JSON.
//
// With Options.Format FormatParquet the records and trace are Parquet files instead
// (format/parquetfile), in hourly Hive-style partitions by arrival under the folder,
// Dir/dt=YYYY-MM-DD/hour=HH/<kind>-<UTC start>.parquet, with the same fields (docs/parquet.md
// lists the columns); payload files stay JSONL. A Parquet file is readable once it is closed
// (rolled by RotateRows, RotateBytes or RotateAge, at the end of its hour, on Close).
//
// Lines are written when a request completes, so within a file they are in completion order
// and a long stream's line comes after shorter requests that arrived later: sort by timestamp
// before replaying (format/trace.SortByTime). A file opened by a rotation starts at the arrival
// of the request whose line rotated it (not when the recorder got to that line, which under load
// can be later); another request in flight across the rotation that arrived earlier still gets
// timestamp 0.
//
// # Sessions
//
// A request with a session id (the Caddy module takes it from the header named by
// session_header) is a turn of that conversation. For every turn after the first, the trace
// and payload lines carry its think time: its arrival minus the end of the previous turn's
// response in the same session (the previous record's start plus its duration_ms), in
// milliseconds, as Mooncake's and AIPerf's "delay" ("delay_ms" in payload files). A turn sent
// before the previous one's response ended has delay 0. Every line keeps its own timestamp as
// usual. The delay is taken in the order records are offered to the recorder, which is the
// order the requests completed: a session whose turns wait for each other (what a chat client
// does) is in turn order. Every turn offered counts, written or not: a turn left out by the
// filters or dropped on a full queue still ends the previous one, so the next turn's delay is
// what its client waited. Sampling (Options.Sample) keeps or leaves out whole sessions.
//
// The recorder remembers the end of each open session's latest turn in a table bounded by
// Options.MaxSessions; a session idle for Options.SessionIdle is forgotten (its next turn is
// then written as a first turn, without a delay). A session that starts while the table is
// full is not remembered: its next turn has no delay. Both are counted (Stats.SessionsExpired,
// Stats.SessionsUntracked).
//
// # Hash ids
//
// The prompt (the texts decode.ParseRequestFor extracts, joined by newlines) is tokenized with
// the tokenizer that counts the record's tokens (the one given to Submit: the handler's
// tokenizer, o200k_base unless it names a tokenizer file; o200k_base for a record submitted
// without one), so block ids and token counts agree, and cut into blocks of 512 tokens. Block
// i's hash covers block i's tokens and the
// hash of block i-1, so two prompts get the same id for a block exactly when they share every
// token up to its end. The id is the hash itself: HMAC-SHA256 keyed with Options.FleetKey, cut
// to 53 bits (below 2^53, so JavaScript and jq read it exactly). It depends on nothing but the
// key and the prompt, so the same prefix gets the same ids in every file, across rotations, and
// in every process given the same key: the traces of a fleet merge (llmtap trace merge
// renumbers them densely). No map of seen hashes is kept, so nothing is forgotten. Without a
// key, a random one is drawn per process: ids agree within the process only. The number of
// ids is ceil(input_length/512) as Mooncake requires: when the server's input token count
// (which includes its chat template) spans more blocks than the tokenized text, random 53-bit
// ids are appended (unique, also in a merge); when fewer, the list is cut.
//
// # Secrets
//
// A Recorder sees records and request bodies, never headers; the session id is the value of one
// configured header, which must not be an authorization, API-key or cookie header (the Caddy
// module refuses those). Request bodies are written only with Options.Payloads, after the
// redaction rules of Options.Redact.
package recorder
