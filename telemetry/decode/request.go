package decode

import (
	"sync"

	"github.com/valyala/fastjson"
)

// RequestParser reads request bodies: OpenAI chat and completions with Parse, the other APIs of
// the decoder table with ParseFor. It keeps its fastjson parser
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
	return ParseRequestFor("", body, maxPrompt)
}

// ParseRequestFor is ParseRequest for a request of the named API (a name ForPath or APIForPath
// returned), read with that API's fields: see RequestParser.ParseFor. An empty or unknown name,
// and the OpenAI chat and completions APIs, get ParseRequest's rules.
func ParseRequestFor(api string, body []byte, maxPrompt int) Request {
	rp := requestParsers.Get().(*RequestParser)
	var req Request
	if maxPrompt > 0 {
		req.Prompt = make([]byte, 0, min(len(body), maxPrompt))
	}
	rp.ParseFor(api, body, maxPrompt, &req)
	if len(rp.fix) > maxPooledBuffer {
		rp.fix = nil
	}
	requestParsers.Put(rp)
	return req
}

// Parse reads an OpenAI chat or completions request body into req, reusing req.Prompt's storage
// and req.Model when the model is the same, and keeping at most maxPrompt bytes of prompt text
// (none when maxPrompt <= 0).
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
	rp.ParseFor("", body, maxPrompt, req)
}

// ParseFor is Parse for a request of the named API. The OpenAI rules of Parse apply to every
// API; the other APIs then read their own fields (see nativeRequest), which replace Stream,
// MaxTokens and the prompt where the API has them.
func (rp *RequestParser) ParseFor(api string, body []byte, maxPrompt int, req *Request) {
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
	nativeRequest(api, v, req)
	if maxPrompt <= 0 {
		return
	}
	pb := promptBuilder{buf: req.Prompt, max: maxPrompt, truncated: req.PromptTruncated}
	nativePrompt(api, v, &pb)
	req.Prompt, req.PromptTruncated = pb.buf, pb.truncated
}

// openAIPrompt adds the prompt texts of an OpenAI chat or completions request (see Parse).
func openAIPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.messages(v.GetArray("messages"))
	pb.strings(v.Get("prompt"))
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
