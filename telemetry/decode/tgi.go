package decode

import (
	"github.com/valyala/fastjson"
)

// APITGIGenerate is the API name of Hugging Face text-generation-inference's native routes,
// POST /generate_stream (SSE) and POST /generate (a body). TGI's OpenAI-compatible
// /v1/chat/completions and /v1/completions are the OpenAI APIs.
const APITGIGenerate = "tgi.generate"

// NewTGI returns a decoder for TGI's native responses: the /generate_stream events
// ({"index":…, "token":{"id":…, "text":…, "special":…}, "generated_text":…, "details":…}) and
// the /generate body ({"generated_text":…, "details":…}, or an array of those, the shape of the
// Hugging Face Inference API).
//
// An event is Content when its token is not special and has non-empty text; a special token
// (the end-of-sequence "</s>" TGI streams last when the model stops by itself) generates no
// text and is Other. The last event of a stream carries generated_text (the whole text) and,
// when the request asked for details, a details object: finish_reason ("length", "eos_token",
// "stop_sequence") becomes FinishReason, generated_tokens OutputTokens and input_length (newer
// versions) InputTokens. That event sets Ended; it is Done when its token is special or absent,
// and Content when its token is text (a stream stopped by max_new_tokens ends on an ordinary
// token), so that the time of the last token counts. TGI sends no "[DONE]" on these routes.
//
// An error ({"error":"…","error_type":"validation"|"generation"|…}, as an event or a body) is
// Error, with error_type as ErrorType. Text is the concatenation of the non-special token texts;
// generated_text is not re-read in a stream, since it repeats them.
func NewTGI() ResponseDecoder {
	d := &tgi{}
	d.init(APITGIGenerate)
	return d
}

// tgi is the decoder NewTGI returns.
type tgi struct {
	base
}

// Event implements ResponseDecoder.
func (d *tgi) Event(typ, data []byte) Kind {
	v, k := d.parseEvent(typ, data)
	if v == nil {
		return k
	}
	var tokenV, genV, detailsV, errV *fastjson.Value
	v.GetObject().Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "token":
			tokenV = x
		case "generated_text":
			genV = x
		case "details":
			detailsV = x
		case "error":
			errV = x
		}
	})
	if errV != nil && errV.Type() != fastjson.TypeNull {
		d.error(v)
		return Error
	}
	content := false
	if tokenV != nil && !tokenV.GetBool("special") {
		if s := nonEmptyString(tokenV.Get("text")); s != nil {
			d.text(s)
			content = true
		}
	}
	hasDetails := d.details(detailsV) // read first: the || below must not skip it
	final := hasDetails || (genV != nil && genV.Type() != fastjson.TypeNull)
	if final {
		d.res.Ended = true
		d.res.Choices = 1
	}
	switch {
	case content:
		return d.classify(true, false)
	case final:
		return Done
	}
	return Other
}

// Body implements ResponseDecoder for a /generate body; one with generated text counts as one
// content event.
func (d *tgi) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	v, err := d.p.ParseBytes(body)
	if err != nil {
		d.res.Malformed++
		return Malformed
	}
	if v.Type() == fastjson.TypeArray {
		// The Inference API shape: one object per sequence; the first is the answer.
		a := v.GetArray()
		if len(a) == 0 {
			return Other
		}
		v = a[0]
	}
	if v.Type() != fastjson.TypeObject {
		d.res.Malformed++
		return Malformed
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		d.error(v)
		return Error
	}
	d.details(v.Get("details"))
	content := false
	if s := nonEmptyString(v.Get("generated_text")); s != nil {
		d.text(s)
		content = true
	}
	return d.classify(content, false)
}

// Reset implements ResponseDecoder, keeping the parser and the text buffers.
func (d *tgi) Reset() { d.reset() }

// details folds a details object and reports whether there was one.
func (d *tgi) details(dt *fastjson.Value) bool {
	if dt == nil || dt.Type() != fastjson.TypeObject {
		return false
	}
	if s := nonEmptyString(dt.Get("finish_reason")); s != nil {
		d.res.FinishReason = internReason(s)
	}
	if n := count(dt.Get("generated_tokens")); n >= 0 {
		d.res.Usage.OutputTokens, d.res.HasUsage = n, true
	}
	if n := count(dt.Get("input_length")); n >= 0 {
		d.res.Usage.InputTokens, d.res.HasUsage = n, true
	}
	return true
}

// error records TGI's error shape, whose type is a sibling of the message.
func (d *tgi) error(v *fastjson.Value) {
	if !d.errorObject(v) {
		d.res.ErrorType, d.res.ErrorMessage = "", "error"
	}
	if t := v.GetStringBytes("error_type"); len(t) > 0 && d.res.ErrorType == "" {
		d.res.ErrorType = cappedString(t, maxErrorMessage)
	}
}

// Interface guards.
var (
	_ ResponseDecoder = (*tgi)(nil)
	_ TextLimiter     = (*tgi)(nil)
	_ pooled          = (*tgi)(nil)
)
