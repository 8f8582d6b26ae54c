package decode

import (
	"bytes"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// This file holds the helpers every JSON decoder in the package folds its findings with: capped
// text buffers, token counts, distinct choice indexes, interned finish reasons and error objects.
// They are written for the steady state of a stream: none of them allocates once the decoder's
// buffers have grown to the size of a response.

// maxErrorMessage caps ErrorMessage so that a server which puts a whole stack trace into an
// error object cannot make a record arbitrarily large.
const maxErrorMessage = 1024

// maxChoiceIndex bounds the choice indexes counted in Result.Choices. OpenAI caps n at 128; the
// bound only keeps a hostile index from growing the bitset without limit. Indexes outside
// [0, maxChoiceIndex) are still classified, just not counted.
const maxChoiceIndex = 1024

// TextLimiter is implemented by decoders that keep generated text for token counting. SetMaxText
// changes the cap on Result.Text and Result.ReasoningText (each; MaxText by default) for the
// responses that follow; n <= 0 keeps no text at all. Text beyond the cap is dropped and
// Result.TextTruncated is set, so a tokenizer count made from it is known to be a lower bound.
type TextLimiter interface {
	SetMaxText(n int)
}

// appendCapped appends s to dst without letting dst grow past max bytes. When s does not fit,
// the part that does is appended, cut back to a UTF-8 rune boundary so that a tokenizer never
// sees half a character, and truncated is true.
func appendCapped(dst, s []byte, max int) (out []byte, truncated bool) {
	room := max - len(dst)
	if len(s) <= room {
		return append(dst, s...), false
	}
	if room <= 0 {
		return dst, true
	}
	return append(dst, trimPartialRune(s[:room])...), true
}

// trimPartialRune drops an incomplete UTF-8 sequence from the end of b (at most 3 bytes), so
// that a prefix cut at an arbitrary byte ends on a character boundary.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// count reads a token count. A missing, null, non-numeric, negative or absurdly large value is
// -1 (unknown), the convention of Usage. Floats are accepted because some servers serialise
// counts through a float type ("5.0").
func count(v *fastjson.Value) int64 {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return -1
	}
	f := v.GetFloat64()
	if f < 0 || f > 1<<53 {
		return -1
	}
	return int64(f)
}

// last returns the value at the path keys inside v, taking at each level the last member of a
// key that an object repeats, as Go's encoding/json (into a map) and Python's json read it:
// fastjson's Get takes the first. Usage counts are read with it, so that a usage object with
// duplicate keys gives the count the server's own clients read (FuzzUsageLastKeyWins).
func last(v *fastjson.Value, keys ...string) *fastjson.Value {
	for _, k := range keys {
		if v == nil || v.Type() != fastjson.TypeObject {
			return nil
		}
		var found *fastjson.Value
		v.GetObject().Visit(func(key []byte, x *fastjson.Value) {
			if string(key) == k {
				found = x
			}
		})
		v = found
	}
	return v
}

// openAIUsage reads an OpenAI usage object (chat and completions share it). ok is false for a
// missing or null usage, and for a usage whose counts are all zero: Ollama's /v1/completions
// sends such a placeholder on every chunk before the real one, and a response that never
// delivers the real one (an interrupted stream) must fall back to the tokenizer instead of
// reporting zero tokens. A real response always has prompt_tokens >= 1.
func openAIUsage(u *fastjson.Value) (Usage, bool) {
	if u == nil || u.Type() != fastjson.TypeObject {
		return NoUsage, false
	}
	us := Usage{
		InputTokens:     count(last(u, "prompt_tokens")),
		OutputTokens:    count(last(u, "completion_tokens")),
		ReasoningTokens: count(last(u, "completion_tokens_details", "reasoning_tokens")),
		CachedTokens:    count(last(u, "prompt_tokens_details", "cached_tokens")),
	}
	if us.InputTokens <= 0 && us.OutputTokens <= 0 && count(last(u, "total_tokens")) <= 0 {
		return NoUsage, false
	}
	return us, true
}

// reasoningApart returns u with its reasoning tokens added to its output count when the usage's
// total shows that the server counted them apart: xAI's chat completions report
// completion_tokens without the reasoning tokens (total_tokens = prompt_tokens +
// completion_tokens + reasoning_tokens), where OpenAI's completion_tokens, and llmtap's output
// count (docs/metrics.md), include them.
func reasoningApart(u Usage, total int64) Usage {
	if u.ReasoningTokens > 0 && u.InputTokens >= 0 && u.OutputTokens >= 0 && total == u.InputTokens+u.OutputTokens+u.ReasoningTokens {
		u.OutputTokens += u.ReasoningTokens
	}
	return u
}

// choiceSet counts distinct choice indexes with a bitset that is cleared, not freed, between
// responses.
type choiceSet struct {
	bits []uint64
	n    int
}

// add records index i and returns the number of distinct indexes seen.
func (s *choiceSet) add(i int64) int {
	if i < 0 || i >= maxChoiceIndex {
		return s.n
	}
	w := int(i >> 6)
	if w >= len(s.bits) {
		if w < cap(s.bits) {
			s.bits = s.bits[:w+1]
		} else {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
		}
	}
	m := uint64(1) << (uint(i) & 63)
	if s.bits[w]&m == 0 {
		s.bits[w] |= m
		s.n++
	}
	return s.n
}

func (s *choiceSet) reset() {
	clear(s.bits)
	s.bits = s.bits[:0]
	s.n = 0
}

// internFinish returns the finish reason as a string, without allocating for the reasons the
// OpenAI-compatible servers actually send.
func internFinish(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	case "abort":
		return "abort"
	case "error":
		return "error"
	}
	return string(b)
}

// nonEmptyString returns v's string bytes when v is a non-empty JSON string, else nil.
func nonEmptyString(v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	if s := v.GetStringBytes(); len(s) > 0 {
		return s
	}
	return nil
}

// cappedString copies at most max bytes of b into a string (cut on a rune boundary).
func cappedString(b []byte, max int) string {
	if len(b) > max {
		b = trimPartialRune(b[:max])
	}
	return string(b)
}

// errorFields extracts type and message from the error shapes servers send, in a stream or as a
// body. v is the top-level object; ok is false when it is not an error. Recognised:
//
//	{"error": {"message": "...", "type": "...", "code": ...}}   OpenAI, Ollama /v1, SGLang
//	{"error": "message"}                                        Ollama native, some gateways
//	{"object": "error", "message": "...", "type": "...", ...}   vLLM
//
// The type falls back to the code when a server sends only a code.
func errorFields(v *fastjson.Value) (typ, msg string, ok bool) {
	e := v.Get("error")
	switch {
	case e != nil && e.Type() == fastjson.TypeObject:
	case e != nil && e.Type() == fastjson.TypeString:
		return "", cappedString(e.GetStringBytes(), maxErrorMessage), true
	case bytes.Equal(v.GetStringBytes("object"), []byte("error")):
		e = v
	default:
		return "", "", false
	}
	msg = cappedString(e.GetStringBytes("message"), maxErrorMessage)
	if t := e.GetStringBytes("type"); len(t) > 0 {
		typ = cappedString(t, maxErrorMessage)
	} else if c := e.Get("code"); c != nil {
		switch c.Type() {
		case fastjson.TypeString:
			typ = cappedString(c.GetStringBytes(), maxErrorMessage)
		case fastjson.TypeNumber:
			typ = cappedString(c.MarshalTo(nil), maxErrorMessage)
		}
	}
	return typ, msg, true
}

// trimSpace trims ASCII white space (what JSON and SSE consider white space) without the
// Unicode tables of bytes.TrimSpace.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
