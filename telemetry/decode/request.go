package decode

import (
	"sync"

	"github.com/valyala/fastjson"
)

// RequestParser reads OpenAI chat and completions request bodies. It keeps its fastjson parser
// and scratch buffer between calls, so parsing into a reused Request does not allocate once
// the buffers have grown. A RequestParser is not safe for concurrent use; ParseRequest draws
// one from a pool.
type RequestParser struct {
	p   fastjson.Parser
	fix []byte
}

var requestParsers = sync.Pool{New: func() any { return new(RequestParser) }}

// ParseRequest reads an OpenAI chat or completions request body, keeping at most maxPrompt bytes
// of prompt text (none when maxPrompt <= 0). The returned Request owns its Prompt. See
// RequestParser.Parse for the rules.
func ParseRequest(body []byte, maxPrompt int) Request {
	rp := requestParsers.Get().(*RequestParser)
	var req Request
	if maxPrompt > 0 {
		req.Prompt = make([]byte, 0, min(len(body), maxPrompt))
	}
	rp.Parse(body, maxPrompt, &req)
	if len(rp.fix) > maxPooledBuffer {
		rp.fix = nil
	}
	requestParsers.Put(rp)
	return req
}

// Parse reads body into req, reusing req.Prompt's storage and req.Model when the model is the
// same, and keeping at most maxPrompt bytes of prompt text (none when maxPrompt <= 0).
//
// Fields: model; stream; stream_options.include_usage; max_completion_tokens, else max_tokens
// (a null or absent value falls through), else -1; n (1 unless a positive number). The prompt
// is every text of the request joined by "\n", in order: messages[].content when it is a
// string, and the "text" of each content part when it is an array of parts (image and audio
// parts have none); then prompt, a string or an array of strings (token-id prompts carry no
// text). Empty texts are skipped. Text past maxPrompt is dropped, cut on a UTF-8 boundary, and
// PromptTruncated is set.
//
// A body that is not a JSON object leaves Valid false and the defaults in place. A body that
// was cut short (the caller captured only its first bytes) is also not Valid, but the fields
// that arrived whole are read from it (see closeTruncated), the prompt text that arrived is
// kept, and PromptTruncated is set: the prompt is then a lower bound.
func (rp *RequestParser) Parse(body []byte, maxPrompt int, req *Request) {
	prev := req.Model
	*req = Request{MaxTokens: -1, N: 1, Prompt: req.Prompt[:0]}
	v, err := rp.p.ParseBytes(body)
	cut := false
	if err != nil {
		var ok bool
		rp.fix, ok = closeTruncated(rp.fix[:0], body)
		if !ok {
			return
		}
		if v, err = rp.p.ParseBytes(rp.fix); err != nil {
			return
		}
		cut = true
	}
	if v.Type() != fastjson.TypeObject {
		return
	}
	req.Valid = !cut
	req.PromptTruncated = cut
	if m := v.GetStringBytes("model"); len(m) > 0 {
		if string(m) == prev {
			req.Model = prev
		} else {
			req.Model = string(m)
		}
	}
	req.Stream = v.GetBool("stream")
	req.IncludeUsage = v.GetBool("stream_options", "include_usage")
	if n := count(v.Get("max_completion_tokens")); n >= 0 {
		req.MaxTokens = n
	} else {
		req.MaxTokens = count(v.Get("max_tokens"))
	}
	if n := count(v.Get("n")); n > 0 && n <= maxChoiceIndex {
		req.N = int(n)
	}
	if maxPrompt <= 0 {
		return
	}
	pb := promptBuilder{buf: req.Prompt, max: maxPrompt, truncated: req.PromptTruncated}
	for _, m := range v.GetArray("messages") {
		c := m.Get("content")
		if c == nil {
			continue
		}
		switch c.Type() {
		case fastjson.TypeString:
			pb.add(c.GetStringBytes())
		case fastjson.TypeArray:
			for _, part := range c.GetArray() {
				pb.add(part.GetStringBytes("text"))
			}
		}
	}
	if p := v.Get("prompt"); p != nil {
		switch p.Type() {
		case fastjson.TypeString:
			pb.add(p.GetStringBytes())
		case fastjson.TypeArray:
			for _, s := range p.GetArray() {
				pb.add(s.GetStringBytes())
			}
		}
	}
	req.Prompt, req.PromptTruncated = pb.buf, pb.truncated
}

// promptBuilder joins prompt texts with "\n" under a byte cap.
type promptBuilder struct {
	buf       []byte
	max       int
	truncated bool
	full      bool
}

func (b *promptBuilder) add(s []byte) {
	if len(s) == 0 {
		return
	}
	if b.full {
		b.truncated = true
		return
	}
	if len(b.buf) > 0 {
		if len(b.buf) >= b.max {
			b.full, b.truncated = true, true
			return
		}
		b.buf = append(b.buf, '\n')
	}
	var cut bool
	b.buf, cut = appendCapped(b.buf, s, b.max)
	if cut {
		b.full, b.truncated = true, true
	}
}
