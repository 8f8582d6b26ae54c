package decode

import (
	"github.com/valyala/fastjson"
)

// API names of Ollama's native API. Its OpenAI-compatible /v1 routes are the OpenAI APIs.
const (
	APIOllamaChat     = "ollama.chat"
	APIOllamaGenerate = "ollama.generate"
)

// NewOllamaChat returns a decoder for Ollama's POST /api/chat responses: NDJSON lines
// ({"model":…, "message":{"role":"assistant","content":…, "thinking":…, "tool_calls":…},
// "done":false}) when streamed, the default, or one object when the request said
// "stream":false.
//
// A line is Content when message.content is non-empty or message.tool_calls names a call (a
// call arrives whole, its arguments a JSON object that is appended to Text as sent); it is
// Reasoning when its only text is message.thinking. The last line has "done":true and the
// totals: prompt_eval_count is InputTokens, eval_count OutputTokens, done_reason ("stop",
// "length", "load", "unload") FinishReason, and prompt_eval_duration, eval_duration,
// load_duration and total_duration (nanoseconds) go to ServerTimings with the two counts. That
// line sets Ended and is Done, unless it also carries text, when it is Content (or Reasoning)
// so that its time counts. An {"error":"…"} line is Error.
//
// The decoder reads /api/generate lines too (and NewOllamaGenerate's reads /api/chat lines), so
// a gateway that routes one under the other's path is still measured.
func NewOllamaChat() ResponseDecoder { return newOllama(APIOllamaChat) }

// NewOllamaGenerate returns a decoder for Ollama's POST /api/generate responses, whose lines
// carry the text in "response" and the reasoning in "thinking"; the other rules are those of
// NewOllamaChat.
func NewOllamaGenerate() ResponseDecoder { return newOllama(APIOllamaGenerate) }

func newOllama(api string) *ollama {
	d := &ollama{}
	d.init(api)
	return d
}

// ollama decodes both native Ollama response APIs.
type ollama struct {
	base
}

// Event implements ResponseDecoder for one NDJSON line.
func (d *ollama) Event(typ, data []byte) Kind {
	v, k := d.parseEvent(typ, data)
	if v == nil {
		return k
	}
	content, reasoning, final, failed := d.fold(v)
	switch {
	case failed:
		return Error
	case content || reasoning:
		return d.classify(content, reasoning)
	case final:
		return Done
	}
	return Other
}

// Body implements ResponseDecoder for a "stream":false response, one object that is also the
// final line; one with generated text counts as one content (or reasoning) event.
func (d *ollama) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	v := d.object(body)
	if v == nil {
		return Malformed
	}
	content, reasoning, _, failed := d.fold(v)
	if failed {
		return Error
	}
	return d.classify(content, reasoning)
}

// Reset implements ResponseDecoder, keeping the parser and the text buffers.
func (d *ollama) Reset() { d.reset() }

// fold reads one line (or body). Its members are visited once rather than looked up one by one:
// the final line has a dozen of them, the others five, and most keys asked for are absent.
func (d *ollama) fold(v *fastjson.Value) (content, reasoning, final, failed bool) {
	var msgV, respV, thinkV, doneV, reasonV, errV *fastjson.Value
	var promptN, evalN, promptD, evalD, loadD, totalD *fastjson.Value
	v.GetObject().Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "model":
			d.setModel(x.GetStringBytes())
		case "message":
			msgV = x
		case "response":
			respV = x
		case "thinking":
			thinkV = x
		case "done":
			doneV = x
		case "done_reason":
			reasonV = x
		case "error":
			errV = x
		case "prompt_eval_count":
			promptN = x
		case "eval_count":
			evalN = x
		case "prompt_eval_duration":
			promptD = x
		case "eval_duration":
			evalD = x
		case "load_duration":
			loadD = x
		case "total_duration":
			totalD = x
		}
	})
	if errV != nil && errV.Type() != fastjson.TypeNull {
		if !d.errorObject(v) {
			d.res.ErrorType, d.res.ErrorMessage = "", "error"
		}
		return false, false, false, true
	}
	if s := nonEmptyString(respV); s != nil {
		d.text(s)
		content = true
	}
	if s := nonEmptyString(thinkV); s != nil {
		d.reasoning(s)
		reasoning = true
	}
	if m := msgV.GetObject(); m != nil {
		c, r := d.message(m)
		content, reasoning = content || c, reasoning || r
	}
	if doneV == nil || doneV.Type() != fastjson.TypeTrue {
		return content, reasoning, false, false
	}
	d.res.Ended = true
	d.res.Choices = 1
	if s := nonEmptyString(reasonV); s != nil {
		d.res.FinishReason = internReason(s)
	}
	in, out := count(promptN), count(evalN)
	if in >= 0 || out >= 0 {
		d.res.Usage.InputTokens, d.res.Usage.OutputTokens, d.res.HasUsage = in, out, true
	}
	st := ServerTimings{
		PromptEvalCount:    max(in, 0),
		EvalCount:          max(out, 0),
		LoadDuration:       nanos(loadD),
		PromptEvalDuration: nanos(promptD),
		EvalDuration:       nanos(evalD),
		TotalDuration:      nanos(totalD),
	}
	if st != (ServerTimings{}) {
		st.Format = FormatOllama // only when the line reported something
	}
	d.res.ServerTimings = st
	return content, reasoning, true, false
}

// message folds a chat message object.
func (d *ollama) message(m *fastjson.Object) (content, reasoning bool) {
	var contentV, thinkV, toolsV *fastjson.Value
	m.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "content":
			contentV = x
		case "thinking":
			thinkV = x
		case "tool_calls":
			toolsV = x
		}
	})
	if s := nonEmptyString(contentV); s != nil {
		d.text(s)
		content = true
	}
	if s := nonEmptyString(thinkV); s != nil {
		d.reasoning(s)
		reasoning = true
	}
	for _, tc := range toolsV.GetArray() {
		f := tc.Get("function")
		if f == nil {
			continue
		}
		name := nonEmptyString(f.Get("name"))
		if name != nil {
			d.text(name)
		}
		if d.jsonText(f.Get("arguments")) || name != nil {
			d.res.ToolCalls, content = true, true
		}
	}
	return content, reasoning
}

// Interface guards.
var (
	_ ResponseDecoder = (*ollama)(nil)
	_ TextLimiter     = (*ollama)(nil)
	_ pooled          = (*ollama)(nil)
)
