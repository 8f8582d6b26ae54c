package meter

import (
	"testing"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestClassify is the error classification of a finished exchange, one row per rule and one
// per precedence between two rules that both hold.
func TestClassify(t *testing.T) {
	t.Parallel()
	chat, unknown := decode.APIOpenAIChat, decode.APIUnknown
	ok := outcome{status: 200, stream: true, api: chat, ended: true, contentEvents: 3}
	with := func(edit func(*outcome)) outcome { o := ok; edit(&o); return o }
	tests := []struct {
		name      string
		in        outcome
		class     string
		msgPrefix string
		reason    string
	}{
		{"complete stream", ok, "", "",
			"a stream that reached its end event with content is a success"},
		{"caller failure", with(func(o *outcome) { o.failure, o.errMsg = record.ErrUpstream, "reset" }),
			record.ErrUpstream, "reset", "the failure the caller saw comes first, with its message"},
		{"cancel after the end", with(func(o *outcome) { o.failure, o.errMsg = record.ErrCanceled, "gone" }),
			"", "", "a client that closed once it had read the end of the stream was not canceled"},
		{"cancel before the end", with(func(o *outcome) { o.failure, o.errMsg, o.ended = record.ErrCanceled, "gone", false }),
			record.ErrCanceled, "gone", "a client that left mid-stream canceled it"},
		{"cancel of a non-stream", with(func(o *outcome) { o.failure, o.errMsg, o.stream = record.ErrCanceled, "gone", false }),
			record.ErrCanceled, "gone", "the end-of-stream excuse applies to streams only"},
		{"http status", with(func(o *outcome) { o.status, o.upstreamMsg = 503, "overloaded" }),
			record.ErrHTTP, "overloaded", "a status of 400 or more is an HTTP error with the upstream's message"},
		{"http status over stream error", with(func(o *outcome) { o.status, o.streamErr, o.upstreamMsg = 500, true, "boom" }),
			record.ErrHTTP, "boom", "the status is more specific than the error event it carried"},
		{"caller failure over http status", with(func(o *outcome) { o.failure, o.status = record.ErrUpstream, 502 }),
			record.ErrUpstream, "", "what the caller saw outranks the status"},
		{"stream error", with(func(o *outcome) { o.streamErr, o.upstreamMsg = true, "rate limited" }),
			record.ErrStream, "rate limited", "an error event inside a 200 stream"},
		{"decompression bomb", with(func(o *outcome) { o.decodeStop = DecodeStoppedRatio }),
			record.ErrMalformed, "the body decoded to more than 512 times", "a body that inflates past the ratio bound is malformed"},
		{"size bound is no error", with(func(o *outcome) { o.decodeStop, o.ended = DecodeStoppedSize, false }),
			"", "", "decoding stopped at the size bound: the end was not seen, but the stream was not cut"},
		{"undecodable encoding", with(func(o *outcome) { o.inflateFails, o.contentEvents = 1, 0 }),
			record.ErrMalformed, "the body could not be decoded in its Content-Encoding", "nothing measured because the encoding failed"},
		{"encoding failure after content", with(func(o *outcome) { o.inflateFails = 1 }),
			"", "", "content was measured before the encoding failed"},
		{"truncated inside an event", with(func(o *outcome) { o.truncated = true }),
			record.ErrTruncated, "the stream ended inside an event", "the framer held part of an event at the end"},
		{"stream error over truncation", with(func(o *outcome) { o.truncated, o.streamErr = true, true }),
			record.ErrStream, "", "the error event explains the cut"},
		{"no end event", with(func(o *outcome) { o.ended = false }),
			record.ErrTruncated, "the stream ended without the event that ends a complete openai.chat response",
			"an API that ends with an end event was cut short without one"},
		{"no end event expected", with(func(o *outcome) { o.ended, o.api = false, unknown }),
			"", "", "an unknown API has no end event to miss"},
		{"no end event in a body", with(func(o *outcome) { o.ended, o.stream = false, false }),
			"", "", "a non-streaming response has no end event"},
		{"nothing decoded", with(func(o *outcome) { o.malformed, o.contentEvents = 2, 0 }),
			record.ErrMalformed, "no event of the stream could be decoded as openai.chat", "every event failed to decode"},
		{"some malformed events", with(func(o *outcome) { o.malformed = 2 }),
			"", "", "a few bad events among content are counted, not an error"},
		{"truncation over malformed", with(func(o *outcome) { o.malformed, o.contentEvents, o.truncated = 2, 0, true }),
			record.ErrTruncated, "the stream ended inside an event", "the cut is more specific than undecodable events"},
	}
	for _, tt := range tests {
		class, msg := classify(tt.in)
		if class != tt.class || len(msg) < len(tt.msgPrefix) || msg[:len(tt.msgPrefix)] != tt.msgPrefix || (tt.class == "" && msg != "") {
			t.Errorf("%s: %s\ngot  %q %q\nwant %q %q…", tt.name, tt.reason, class, msg, tt.class, tt.msgPrefix)
		}
	}
}
