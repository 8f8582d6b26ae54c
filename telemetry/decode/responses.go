package decode

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// APIOpenAIResponses is the API name of OpenAI's Responses API (POST /v1/responses).
const APIOpenAIResponses = "openai.responses"

// NewResponses returns a decoder for Responses API responses, streamed (typed SSE events) or not
// (a response object).
//
// Events are told apart by the "type" member of their data (which repeats the SSE event name),
// or by the event name when the data has none. Any "*.delta" event with a non-empty string
// delta generates output: response.reasoning_text.delta and
// response.reasoning_summary_text.delta are Reasoning; every other delta (output_text, refusal,
// function_call_arguments, custom_tool_call_input, audio transcripts and the tool-call deltas
// of built-in tools) is Content. Refusal deltas set Refusal, tool-call argument deltas set
// ToolCalls. response.output_item.added is Content when it opens a function or custom tool call
// with a name, for the reason NewOpenAIChat gives. The "*.done" events repeat text already
// counted and are Other, as are the lifecycle events (response.created, response.in_progress,
// content parts, annotations).
//
// The Responses API sends no "[DONE]": a stream ends with response.completed, or with
// response.incomplete when a limit stopped it. Both are Done and set Ended, so a stream cut
// before either is detected (ExpectsDone is true). response.failed and error are Error.
//
// Usage is read from the response object that response.completed, response.incomplete and
// response.failed carry (input_tokens, output_tokens, input_tokens_details.cached_tokens,
// output_tokens_details.reasoning_tokens); an all-zero usage is ignored as in openAIUsage.
// FinishReason is the response's status: "completed", "failed", or for an incomplete response
// the reason in incomplete_details ("max_output_tokens", "content_filter"), else "incomplete".
// Audio deltas count as Content but add no text (they are base64 audio, not tokens of text).
func NewResponses() ResponseDecoder {
	d := &responses{}
	d.init(APIOpenAIResponses)
	return d
}

// responses is the decoder NewResponses returns.
type responses struct {
	base
}

var deltaSuffix = []byte(".delta")

// Event implements ResponseDecoder.
func (d *responses) Event(typ, data []byte) Kind {
	data = trimSpace(data)
	if string(typ) == "error" {
		if v, err := d.p.ParseBytes(data); err == nil && v.Type() == fastjson.TypeObject {
			d.errorEvent(v)
		} else {
			d.sseError(data)
		}
		return Error
	}
	if len(data) == 0 {
		return Other
	}
	v := d.object(data)
	if v == nil {
		return Malformed
	}
	var typeV, deltaV, respV, itemV *fastjson.Value
	v.GetObject().Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "type":
			typeV = x
		case "delta":
			deltaV = x
		case "response":
			respV = x
		case "item":
			itemV = x
		}
	})
	t := typeV.GetStringBytes()
	if len(t) == 0 {
		t = typ
	}
	if bytes.HasSuffix(t, deltaSuffix) {
		return d.delta(t, deltaV)
	}
	switch string(t) {
	case "response.created", "response.in_progress", "response.queued":
		d.response(respV)
	case "response.output_item.added":
		c, r := d.item(itemV, false)
		return d.classify(c, r)
	case "response.completed", "response.incomplete":
		d.response(respV)
		d.res.Ended = true
		return Done
	case "response.failed":
		d.response(respV)
		if respV == nil || !d.errorObject(respV) {
			d.res.ErrorType, d.res.ErrorMessage = "", "response failed"
		}
		return Error
	case "error":
		d.errorEvent(v)
		return Error
	}
	return Other
}

// delta folds a "*.delta" event of type t.
func (d *responses) delta(t []byte, dv *fastjson.Value) Kind {
	s := nonEmptyString(dv)
	if s == nil {
		return Other
	}
	switch string(t) {
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		d.reasoning(s)
		return d.classify(false, true)
	case "response.audio.delta":
		// Base64 audio: generated output, but not text a tokenizer could count.
	case "response.refusal.delta":
		d.text(s)
		d.res.Refusal = true
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta",
		"response.mcp_call_arguments.delta", "response.code_interpreter_call_code.delta":
		d.text(s)
		d.res.ToolCalls = true
	default:
		d.text(s)
	}
	return d.classify(true, false)
}

// errorEvent records an error event, which the API sends flat ({"type":"error","code":…,
// "message":…}); the nested shapes of errorFields are accepted too.
func (d *responses) errorEvent(v *fastjson.Value) {
	if d.errorObject(v) {
		return
	}
	d.res.ErrorMessage = cappedString(v.GetStringBytes("message"), maxErrorMessage)
	d.res.ErrorType = ""
	if d.res.ErrorMessage == "" {
		d.res.ErrorMessage = "error"
	}
	if c := v.Get("code"); c != nil {
		switch c.Type() {
		case fastjson.TypeString:
			d.res.ErrorType = cappedString(c.GetStringBytes(), maxErrorMessage)
		case fastjson.TypeNumber:
			d.scratch = c.MarshalTo(d.scratch[:0])
			d.res.ErrorType = cappedString(d.scratch, maxErrorMessage)
		}
	}
}

// Body implements ResponseDecoder for a complete response object; one with generated text
// counts as one content (or reasoning) event.
func (d *responses) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	v := d.object(body)
	if v == nil {
		return Malformed
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		d.response(v)
		if !d.errorObject(v) {
			d.res.ErrorType, d.res.ErrorMessage = "", cappedString(body, maxErrorMessage)
		}
		return Error
	}
	d.response(v)
	var content, reasoning bool
	for _, it := range v.GetArray("output") {
		c, r := d.item(it, true)
		content, reasoning = content || c, reasoning || r
	}
	return d.classify(content, reasoning)
}

// Reset implements ResponseDecoder, keeping the parser and the text buffers.
func (d *responses) Reset() { d.reset() }

// response folds a response object: model, usage and, once it is final, its status.
func (d *responses) response(r *fastjson.Value) {
	if r == nil || r.Type() != fastjson.TypeObject {
		return
	}
	d.setModel(r.GetStringBytes("model"))
	if u, ok := responsesUsage(last(r, "usage")); ok {
		d.res.Usage, d.res.HasUsage = u, true
	}
	switch st := r.GetStringBytes("status"); string(st) {
	case "completed", "failed", "cancelled":
		d.res.FinishReason = internReason(st)
	case "incomplete":
		if why := nonEmptyString(r.Get("incomplete_details", "reason")); why != nil {
			d.res.FinishReason = internReason(why)
		} else {
			d.res.FinishReason = "incomplete"
		}
	}
}

// item folds an output item. In a stream only the opening of a tool call carries generated
// text (its name; the text and arguments follow as deltas); in a body (whole) every item
// carries its text.
func (d *responses) item(it *fastjson.Value, whole bool) (content, reasoning bool) {
	if it == nil {
		return false, false
	}
	switch string(it.GetStringBytes("type")) {
	case "function_call", "custom_tool_call":
		if s := nonEmptyString(it.Get("name")); s != nil {
			d.text(s)
			content = true
		}
		if whole {
			args := it.Get("arguments")
			if args == nil {
				args = it.Get("input")
			}
			if d.jsonText(args) {
				content = true
			}
		}
		if content {
			d.res.ToolCalls = true
		}
	case "message":
		if !whole {
			break
		}
		for _, p := range it.GetArray("content") {
			if s := nonEmptyString(p.Get("text")); s != nil {
				d.text(s)
				content = true
			}
			if s := nonEmptyString(p.Get("refusal")); s != nil {
				d.text(s)
				d.res.Refusal, content = true, true
			}
		}
	case "reasoning":
		if !whole {
			break
		}
		for _, key := range [...]string{"summary", "content"} {
			for _, p := range it.GetArray(key) {
				if s := nonEmptyString(p.Get("text")); s != nil {
					d.reasoning(s)
					reasoning = true
				}
			}
		}
	}
	return content, reasoning
}

// responsesUsage reads a Responses API usage object. ok is false for a missing, null or
// all-zero usage (see openAIUsage).
func responsesUsage(u *fastjson.Value) (Usage, bool) {
	if u == nil || u.Type() != fastjson.TypeObject {
		return NoUsage, false
	}
	us := Usage{
		InputTokens:     count(last(u, "input_tokens")),
		OutputTokens:    count(last(u, "output_tokens")),
		ReasoningTokens: count(last(u, "output_tokens_details", "reasoning_tokens")),
		CachedTokens:    count(last(u, "input_tokens_details", "cached_tokens")),
	}
	if us.InputTokens <= 0 && us.OutputTokens <= 0 && count(last(u, "total_tokens")) <= 0 {
		return NoUsage, false
	}
	return us, true
}

// Interface guards.
var (
	_ ResponseDecoder = (*responses)(nil)
	_ TextLimiter     = (*responses)(nil)
	_ pooled          = (*responses)(nil)
)
