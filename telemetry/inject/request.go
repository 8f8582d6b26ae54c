package inject

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// Result says what AddIncludeUsage did with a request body.
type Result uint8

const (
	// Injected means the body was rewritten to ask for usage: the response will carry a
	// usage-only chunk the client did not ask for, which Filter must remove.
	Injected Result = iota
	// AlreadyAsked means the request asks for usage itself (stream_options.include_usage is
	// true): the body is unchanged and the client expects the usage chunk.
	AlreadyAsked
	// NotStreaming means the request does not stream (stream is absent or not true): a
	// non-streaming response carries usage anyway.
	NotStreaming
	// Declined means the body was left alone because it is not a JSON object, or is one the
	// server would read differently from this package (a duplicate stream or stream_options
	// key, a stream_options that is neither an object nor null): the server answers it as the
	// client wrote it.
	Declined
)

// String returns the result's name, for logs and test messages.
func (r Result) String() string {
	switch r {
	case Injected:
		return "injected"
	case AlreadyAsked:
		return "already asked"
	case NotStreaming:
		return "not streaming"
	default:
		return "declined"
	}
}

// The bytes inserted, without whitespace (the server reads them, no person does).
const (
	includeUsageMember  = `"include_usage":true`
	streamOptionsMember = `"stream_options":{` + includeUsageMember + `}`
)

// AddIncludeUsage returns an OpenAI chat or completions request body that asks for a usage
// chunk at the end of its stream, and Injected, when body is a streaming request
// ("stream": true) that does not already ask for one. It edits the body minimally and leaves
// every other byte as the client wrote it:
//
//   - no stream_options: the member "stream_options":{"include_usage":true} is added first in
//     the object;
//   - "stream_options": null: the null is replaced by {"include_usage":true};
//   - stream_options is an object without include_usage: "include_usage":true is added first
//     in it, its other keys kept;
//   - include_usage is present but not true (false, null, 0): its value is replaced by true.
//
// Otherwise it returns body itself and says why (see Result). The returned slice is new when
// the result is Injected; body is never modified.
func AddIncludeUsage(body []byte) ([]byte, Result) {
	if fastjson.ValidateBytes(body) != nil {
		return body, Declined
	}
	open := skipSpace(body, 0)
	if open >= len(body) || body[open] != '{' {
		return body, Declined
	}
	top := members(body, open)
	stream, n := find(top, "stream")
	if n > 1 {
		return body, Declined
	}
	if n == 0 || string(body[stream.valStart:stream.valEnd]) != "true" {
		return body, NotStreaming
	}
	opts, n := find(top, "stream_options")
	switch {
	case n > 1:
		return body, Declined
	case n == 0:
		return splice(body, open+1, open+1, streamOptionsMember+","), Injected
	}
	switch body[opts.valStart] {
	case 'n': // null
		return splice(body, opts.valStart, opts.valEnd, "{"+includeUsageMember+"}"), Injected
	case '{':
	default:
		return body, Declined
	}
	inner := members(body, opts.valStart)
	iu, n := find(inner, "include_usage")
	switch {
	case n > 1:
		return body, Declined
	case n == 1 && string(body[iu.valStart:iu.valEnd]) == "true":
		return body, AlreadyAsked
	case n == 1:
		return splice(body, iu.valStart, iu.valEnd, "true"), Injected
	case len(inner) == 0:
		return splice(body, opts.valStart+1, opts.valStart+1, includeUsageMember), Injected
	default:
		return splice(body, opts.valStart+1, opts.valStart+1, includeUsageMember+","), Injected
	}
}

// splice returns a new slice: b with b[from:to] replaced by s.
func splice(b []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(s))
	out = append(out, b[:from]...)
	out = append(out, s...)
	return append(out, b[to:]...)
}

// IsUsageOnly reports whether data, the data of one SSE event, is a usage-only chunk: a JSON
// object whose "choices" is an empty array and whose "usage" is an object. That is the chunk
// stream_options.include_usage adds at the end of an OpenAI stream. Chunks that carry choices
// and a usage (Ollama's /v1/completions puts a zeroed usage on every chunk) are not.
func IsUsageOnly(p *fastjson.Parser, data []byte) bool {
	// Most chunks are content: skip them without parsing.
	if !bytes.Contains(data, []byte(`"usage"`)) || !bytes.Contains(data, []byte(`"choices"`)) {
		return false
	}
	v, err := p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	choices := v.Get("choices")
	if choices == nil || choices.Type() != fastjson.TypeArray {
		return false
	}
	if a, _ := choices.Array(); len(a) != 0 {
		return false
	}
	u := v.Get("usage")
	return u != nil && u.Type() == fastjson.TypeObject
}
