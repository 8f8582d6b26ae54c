package recorder

import (
	"bytes"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// textKeys are the top-level request fields that carry user text in the APIs llmtap decodes
// (OpenAI chat and completions, Responses, Anthropic, Ollama, TGI, embeddings, rerank).
var textKeys = []string{"messages", "prompt", "input", "inputs", "system", "instructions", "query", "documents", "texts"}

// structuralKeys name strings inside those fields that are structure, not text; they keep
// their values so a redacted body still replays against the same API. They match exactly:
// a spelling in another case is masked like text, which costs fidelity, never secrecy.
var structuralKeys = map[string]bool{
	"role": true, "type": true, "name": true, "id": true, "tool_call_id": true, "call_id": true,
	"model": true, "format": true, "detail": true, "media_type": true, "mime_type": true,
	"cache_control": true, "status": true,
}

var (
	errNotObject = errors.New("the body is not a JSON object")
	errTooLarge  = errors.New("the body is larger than the payload cap")
)

// Reasons a request body is left out of the payload file (Stats.SkippedPayloadsByReason,
// llmtap_recorder_payloads_skipped_total{reason}).
const (
	// SkipTooLarge: the body is over Options.MaxBodyBytes.
	SkipTooLarge = "too_large"
	// SkipNotObject: the body is not one complete JSON object (empty, an array or another
	// value, invalid JSON, or cut when it was captured).
	SkipNotObject = "not_object"
)

// skipReason names the reason of a payload error.
func skipReason(err error) string {
	if errors.Is(err, errTooLarge) {
		return SkipTooLarge
	}
	return SkipNotObject
}

// redactor rewrites request bodies for the payload file. It keeps a parser and buffers
// between bodies; the writer goroutine owns it.
//
// A rule names a key; it applies to every occurrence of that key in the object, in every
// spelling a server could take for it. Servers disagree on duplicate keys (Python's json and
// Go's encoding/json keep the last, some the first) and Go's encoding/json also matches a key
// in any case (Unicode simple folding, as strings.EqualFold: "API_KEY", "Api_Key", "api_\u212aey"
// with a Kelvin sign), so a rule that acted on one occurrence, or on the exact spelling
// only, would leave in clear the value one of those servers reads. Keys are compared after
// their escapes are decoded ("api\u005fkey" is "api_key").
type redactor struct {
	rules Redact
	max   int
	p     fastjson.Parser
	mask  []byte
	out   []byte
}

// payload returns body as it is to be written: a one-line JSON object with the redaction rules
// applied. The result is valid until the next call. A body over the cap, or one that is not a
// complete JSON object (cut when captured), is refused. The result keeps whatever bytes the
// body had outside the rewritten values, invalid UTF-8 included (see trace.AppendPayloadLine).
func (r *redactor) payload(body []byte) ([]byte, error) {
	if len(body) > r.max {
		return nil, errTooLarge
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errNotObject
	}
	// The parser is lenient (it takes escapes JSON does not have); the validator is not.
	if err := fastjson.ValidateBytes(trimmed); err != nil {
		return nil, errNotObject
	}
	if !r.rules.active() && (!bytes.ContainsAny(trimmed, "\r\n") || !utf8.Valid(trimmed)) {
		return trimmed, nil // verbatim: one line, or written in base64 (see trace.AppendPayloadLine)
	}
	v, err := r.p.ParseBytes(trimmed)
	if err != nil {
		return nil, errNotObject
	}
	o, err := v.Object()
	if err != nil {
		return nil, errNotObject
	}
	// The object is written member by member rather than edited and marshalled: fastjson's
	// Del, Get and Set see only the first of duplicate keys.
	b := append(r.out[:0], '{')
	first := true
	o.Visit(func(k []byte, c *fastjson.Value) {
		if matchAny(r.rules.Fields, k) {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, k)
		b = append(b, ':')
		if r.rules.Text && matchAny(textKeys, k) {
			b = r.appendMasked(b, c)
		} else {
			b = c.MarshalTo(b)
		}
	})
	r.out = append(b, '}')
	return r.out, nil
}

// matchAny reports whether key is one of names in a spelling encoding/json would take for it.
func matchAny(names []string, key []byte) bool {
	for _, n := range names {
		if strings.EqualFold(n, string(key)) {
			return true
		}
	}
	return false
}

// appendMasked writes v with the text inside it masked: every string but the values of
// structural keys inside objects, in every member, duplicates included.
func (r *redactor) appendMasked(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		return appendJSONString(b, r.maskText(v.GetStringBytes()))
	case fastjson.TypeArray:
		items, _ := v.Array()
		b = append(b, '[')
		for i, it := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = r.appendMasked(b, it)
		}
		return append(b, ']')
	case fastjson.TypeObject:
		o, _ := v.Object()
		b = append(b, '{')
		first := true
		o.Visit(func(k []byte, c *fastjson.Value) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			if structuralKeys[string(k)] {
				b = c.MarshalTo(b)
			} else {
				b = r.appendMasked(b, c)
			}
		})
		return append(b, '}')
	}
	return v.MarshalTo(b)
}

// maskText replaces every character of s but whitespace by 'x': the same length in characters.
// The result is valid until the next call.
func (r *redactor) maskText(s []byte) []byte {
	b := r.mask[:0]
	for len(s) > 0 {
		c, n := utf8.DecodeRune(s)
		s = s[n:]
		if unicode.IsSpace(c) {
			b = utf8.AppendRune(b, c)
		} else {
			b = append(b, 'x')
		}
	}
	r.mask = b
	return b
}

// appendJSONString writes s (decoded text) as a JSON string: quotes, backslashes and control
// characters escaped, every other byte kept as it is. fastjson's own escaper is not used for
// rewritten strings: it falls back to Go quoting, whose "\v" and "\x01" JSON does not have.
func appendJSONString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
