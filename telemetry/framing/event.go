// Package framing splits a response byte stream into events as it passes: Server-Sent Events
// (WHATWG event-stream rules) and newline-delimited JSON. Both framers are incremental — an event
// may be split across any number of writes and one write may carry many events — bounded in
// memory, and allocation-free per event in steady state.
package framing

// Event is one dispatched event. Its byte slices alias the framer's internal buffers or, when the
// whole event arrived in one Write, the slice passed to that Write; either way they are valid only
// for the duration of the callback and must not be modified. A consumer that needs them later must
// copy them.
type Event struct {
	// Type is the SSE "event" field of the event, empty when the stream did not set one (the
	// WHATWG default type "message"). Always empty for NDJSON.
	Type []byte
	// Data is the event's data: SSE data lines joined by "\n" (without the final newline), or one
	// NDJSON line without its line terminator. Empty when Oversized is set.
	Data []byte
	// ID is the SSE "id" field, empty when absent. Per the WHATWG rules it is the stream's last
	// event ID: an id field applies to every later event until another id field replaces it, and
	// an id containing NUL is ignored. Always empty for NDJSON.
	ID []byte
	// At is the timestamp the caller passed with the Write that carried the event's first byte.
	// The framers never read a clock: time is the caller's.
	At int64
	// Size is the number of stream bytes the event spanned, including field names, comments and
	// line terminators up to and including the blank line (SSE) or newline (NDJSON) that ended it.
	// For SSE it counts from the end of the previous blank line; a stripped byte order mark is not
	// counted, and when a blank line ends in CR LF the LF is counted in the next event, because the
	// parser dispatches at the CR without waiting to see what follows it.
	Size int
	// Oversized is set when the event's data (or, for SSE, its event type) exceeded the framer's
	// limit: the data was skipped instead of buffered, and Data is empty.
	Oversized bool
}

// Framer is the common shape of the SSE parser and the NDJSON splitter.
type Framer interface {
	// Write feeds the next bytes of the stream, read at time at. It never fails and never keeps a
	// reference to p after it returns.
	Write(p []byte, at int64)
	// Close ends the stream. It reports whether bytes of an unterminated event were pending (a
	// truncated stream); per the WHATWG rules such an event is not dispatched for SSE, while a
	// final NDJSON line without a newline is dispatched.
	Close() (truncated bool)
	// Reset makes the framer ready for a new stream, keeping its buffers.
	Reset()
}
