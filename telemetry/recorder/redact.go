package recorder

import (
	"bytes"
	"errors"
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// textKeys are the top-level request fields that carry user text in the APIs llmtap decodes
// (OpenAI chat and completions, Responses, Anthropic, Ollama, TGI, embeddings, rerank).
var textKeys = []string{"messages", "prompt", "input", "inputs", "system", "instructions", "query", "documents", "texts"}

// structuralKeys name strings inside those fields that are structure, not text; they keep
// their values so a redacted body still replays against the same API.
var structuralKeys = map[string]bool{
	"role": true, "type": true, "name": true, "id": true, "tool_call_id": true, "call_id": true,
	"model": true, "format": true, "detail": true, "media_type": true, "mime_type": true,
	"cache_control": true, "status": true,
}

var (
	errNotObject = errors.New("the body is not a JSON object")
	errTooLarge  = errors.New("the body is larger than the payload cap")
)

// redactor rewrites request bodies for the payload file. It keeps a parser and an arena
// between bodies; the writer goroutine owns it.
type redactor struct {
	rules Redact
	max   int
	p     fastjson.Parser
	a     fastjson.Arena
	mask  []byte
	out   []byte
}

// payload returns body as it is to be written: a one-line JSON object with the redaction rules
// applied. The result is valid until the next call. A body over the cap, or one that is not a
// complete JSON object (cut when captured), is refused.
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
	if !r.rules.active() && bytes.IndexAny(trimmed, "\r\n") < 0 {
		return trimmed, nil // verbatim
	}
	v, err := r.p.ParseBytes(trimmed)
	if err != nil {
		return nil, errNotObject
	}
	o, err := v.Object()
	if err != nil {
		return nil, errNotObject
	}
	for _, f := range r.rules.Fields {
		o.Del(f)
	}
	if r.rules.Text {
		r.a.Reset()
		for _, k := range textKeys {
			if c := o.Get(k); c != nil {
				if s := r.maskValue(c); s != nil {
					o.Set(k, s)
				}
			}
		}
	}
	r.out = v.MarshalTo(r.out[:0])
	return r.out, nil
}

// maskValue masks the text inside v: a string is returned masked (the caller puts it in
// place); objects and arrays are masked in place and nil is returned.
func (r *redactor) maskValue(v *fastjson.Value) *fastjson.Value {
	switch v.Type() {
	case fastjson.TypeString:
		return r.a.NewStringBytes(r.maskText(v.GetStringBytes()))
	case fastjson.TypeArray:
		items, _ := v.Array()
		for i, it := range items {
			if s := r.maskValue(it); s != nil {
				v.SetArrayItem(i, s)
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		var keys []string
		o.Visit(func(k []byte, _ *fastjson.Value) {
			if !structuralKeys[string(k)] {
				keys = append(keys, string(k))
			}
		})
		for _, k := range keys {
			if s := r.maskValue(o.Get(k)); s != nil {
				o.Set(k, s)
			}
		}
	}
	return nil
}

// maskText replaces every character of s but whitespace by 'x': the same length in characters.
// The arena copies the result, so the scratch buffer is reused.
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
