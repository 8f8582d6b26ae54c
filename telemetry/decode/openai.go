package decode

import (
	"github.com/valyala/fastjson"
)

// API names of the OpenAI-compatible decoders, as ForPath reports them and Get accepts them.
const (
	APIOpenAIChat        = "openai.chat"
	APIOpenAICompletions = "openai.completions"
)

// done is the OpenAI end-of-stream sentinel.
var done = []byte("[DONE]")

// NewOpenAIChat returns a decoder for POST /v1/chat/completions responses, streamed
// (chat.completion.chunk events) or not (a chat.completion body).
//
// An event is Content when any of its choices carries a non-empty delta.content, delta.refusal,
// tool-call function name or arguments (delta.tool_calls[].function, or the legacy
// delta.function_call); it is Reasoning when its only generated text is delta.reasoning_content
// or delta.reasoning (both spellings are in use: vLLM renamed the field, DeepSeek and SGLang
// did not), or thinking content parts (Mistral's {"type":"thinking","thinking":[…]} in
// delta.content, see parts), or, when neither string is there, the text of
// delta.reasoning_details (OpenRouter's shape, see reasoningDetails). Role-only deltas, finish-only chunks and usage-only chunks are
// Other; "[DONE]" is Done; an error object is Error (the model and usage a chunk carries beside
// its error are still read); anything that is not a JSON object is Malformed.
//
// A tool call that so far carries only its function name counts as Content: OpenAI sends the
// name (with empty arguments) in the first delta of a tool call, the name is generated output,
// and treating that delta as Other would push TTFT of a tool-call-only response out to the first
// argument fragment. The name is also appended to Result.Text, before its arguments, because
// the server counts its tokens as completion tokens.
//
// Result: Text holds content, refusal text and tool-call names and arguments of all choices in
// arrival order, ReasoningText the reasoning, each under the cap (see TextLimiter). Usage is the
// last non-null usage object (an all-zero one is ignored, see openAIUsage; Groq's x_groq.usage
// when the chunk has no usage of its own; reasoning tokens added to the output count when the
// total shows the server counted them apart, see reasoningApart), Choices the number of
// distinct choice indexes, Finished the number of those that sent a finish_reason, and Ended
// holds while all of them have, FinishReason is that of choice 0 only (the other choices'
// reasons are not kept), Model the last model named. An error object fills ErrorType and ErrorMessage.
//
// The decoder also accepts the legacy completions shape (choices[].text), so a gateway that
// routes one API under the other's path is still measured.
func NewOpenAIChat() ResponseDecoder { return newOpenAI(APIOpenAIChat) }

// NewOpenAICompletions returns a decoder for the legacy POST /v1/completions responses
// (text_completion objects), streamed or not. An event is Content when any choice has a
// non-empty text; the other rules are those of NewOpenAIChat, whose shapes it accepts too.
func NewOpenAICompletions() ResponseDecoder { return newOpenAI(APIOpenAICompletions) }

// openAI decodes both OpenAI-compatible response APIs. It holds one fastjson.Parser for its
// lifetime, so parsing an event reuses the parser's buffers and value cache; text is appended
// to Result.Text and Result.ReasoningText, which Reset truncates but keeps. Streamed events go
// through the fast path of openai_fast.go first, which keeps its record in fast and decodes
// escaped strings into scratch.
type openAI struct {
	base
	choices choiceSet
	// finished holds the choice indexes that sent a finish_reason (Result.Finished).
	finished choiceSet
	fast     chatScan
	// fullOnly disables the fast path, so that tests can compare the two.
	fullOnly bool
}

func newOpenAI(api string) *openAI {
	d := &openAI{}
	d.init(api)
	return d
}

// Event implements ResponseDecoder. typ "error" (an SSE event named error, as some gateways
// send) makes the event an Error whatever its data.
func (d *openAI) Event(typ, data []byte) Kind {
	data = trimSpace(data)
	if string(typ) == "error" {
		d.sseError(data)
		return Error
	}
	if len(data) == 0 {
		return Other
	}
	if string(data) == string(done) {
		return Done
	}
	if !d.fullOnly {
		if k, ok := d.fastEvent(data); ok {
			return k
		}
	}
	return d.fold(data, "delta")
}

// Body implements ResponseDecoder for a complete non-streaming body (chat.completion or
// text_completion). A body with content counts as one content event.
func (d *openAI) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	return d.fold(body, "message")
}

// Reset implements ResponseDecoder, keeping the parser and the text buffers.
func (d *openAI) Reset() {
	d.reset()
	d.choices.reset()
	d.finished.reset()
}

// addChoice records choice index idx, and that it finished when finish is non-empty; it keeps
// FinishReason (choice 0's), Choices, Finished and Ended up to date.
func (d *openAI) addChoice(idx int64, finish []byte) {
	d.res.Choices = d.choices.add(idx)
	if len(finish) > 0 {
		d.res.Finished = d.finished.add(idx)
		if idx == 0 {
			d.res.FinishReason = internFinish(finish)
		}
	}
	d.res.Ended = d.res.Finished > 0 && d.res.Finished >= d.res.Choices
}

// fold parses one JSON object (an event or a body) and folds it into the result. msgKey is the
// key of the per-choice message: "delta" in streams, "message" in bodies; the other one is
// accepted as well, since some servers mix them.
//
// Objects are read with one Visit over their members rather than a Get per key: a chunk has
// about eight members and most of the keys asked for are absent, and fastjson's Get scans the
// members twice for an absent key.
func (d *openAI) fold(data []byte, msgKey string) Kind {
	v, err := d.p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		d.res.Malformed++
		return Malformed
	}
	var errV, objV, modelV, usageV, groqV, choicesV, timingsV *fastjson.Value
	v.GetObject().Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "x_groq":
			groqV = x
		case "choices":
			choicesV = x
		case "timings":
			timingsV = x
		case "model":
			modelV = x
		case "usage":
			usageV = x
		case "error":
			errV = x
		case "object":
			objV = x
		}
	})
	// The model and usage of a chunk are read before its error: a gateway that ends a stream with
	// an error chunk (OpenRouter's mid-stream error) sends the usage of what was generated in
	// that same chunk, and losing it would leave the token counts to the tokenizer.
	d.setModel(modelV.GetStringBytes())
	u, ok := openAIUsage(usageV)
	if !ok && groqV != nil {
		// Groq puts the usage of a stream in x_groq.usage on its last chunk (newer versions
		// send it in usage as well, which then wins).
		usageV = groqV.Get("usage")
		u, ok = openAIUsage(usageV)
	}
	if ok {
		d.res.Usage, d.res.HasUsage = reasoningApart(u, count(last(usageV, "total_tokens"))), true
	}
	if timingsV != nil {
		llamaTimings(&d.res, timingsV) // timings.go
	}
	if (errV != nil && errV.Type() != fastjson.TypeNull) || string(objV.GetStringBytes()) == "error" {
		if typ, msg, ok := errorFields(v); ok {
			d.res.ErrorType, d.res.ErrorMessage = typ, msg
			return Error
		}
	}
	var content, reasoning bool
	for _, c := range choicesV.GetArray() {
		cc, cr := d.choice(c, msgKey)
		content = content || cc
		reasoning = reasoning || cr
	}
	return eventKind(&d.res, content, reasoning)
}

// choice folds one element of choices and reports whether it carried content or reasoning.
func (d *openAI) choice(c *fastjson.Value, msgKey string) (content, reasoning bool) {
	o := c.GetObject()
	if o == nil {
		return false, false
	}
	var indexV, finishV, msgV, otherV, textV *fastjson.Value
	o.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "index":
			indexV = x
		case "finish_reason":
			finishV = x
		case "text":
			textV = x
		case msgKey:
			msgV = x
		case "delta", "message":
			otherV = x
		}
	})
	idx := int64(0) // servers that omit the index send a single choice
	if indexV != nil {
		idx = count(indexV)
	}
	d.addChoice(idx, nonEmptyString(finishV))
	if msgV == nil {
		msgV = otherV
	}
	if m := msgV.GetObject(); m != nil {
		content, reasoning = d.message(m)
	}
	if t := nonEmptyString(textV); t != nil {
		d.text(t)
		content = true
	}
	return content, reasoning
}

// message folds a delta (stream) or message (body) object.
func (d *openAI) message(m *fastjson.Object) (content, reasoning bool) {
	var contentV, refusalV, toolsV, fnV, reasonV, reasonAltV, detailsV *fastjson.Value
	m.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "reasoning_details":
			detailsV = x
		case "content":
			contentV = x
		case "refusal":
			refusalV = x
		case "tool_calls":
			toolsV = x
		case "function_call":
			fnV = x
		case "reasoning_content":
			reasonV = x
		case "reasoning":
			reasonAltV = x
		}
	})
	if contentV != nil {
		switch contentV.Type() {
		case fastjson.TypeString:
			if s := contentV.GetStringBytes(); len(s) > 0 {
				d.text(s)
				content = true
			}
		case fastjson.TypeArray:
			content, reasoning = d.parts(contentV.GetArray())
		}
	}
	if s := nonEmptyString(refusalV); s != nil {
		d.text(s)
		d.res.Refusal = true
		content = true
	}
	for _, tc := range toolsV.GetArray() {
		if d.function(tc.Get("function")) {
			content = true
		}
	}
	if d.function(fnV) {
		content = true
	}
	r := nonEmptyString(reasonV)
	if r == nil {
		r = nonEmptyString(reasonAltV)
	}
	if r != nil {
		d.reasoning(r)
		reasoning = true
	} else if d.reasoningDetails(detailsV) {
		reasoning = true
	}
	return content, reasoning
}

// reasoningDetails folds OpenRouter's reasoning_details (also sent by providers behind it, and
// by Snowflake Cortex): an array of {"type":"reasoning.text","text":…} or
// {"type":"reasoning.summary","summary":…} parts, and "reasoning.encrypted" ones that carry no
// readable text. It is read only when the delta has no reasoning string, since OpenRouter sends
// the same text in both. It reports whether any part held text.
func (d *openAI) reasoningDetails(v *fastjson.Value) bool {
	found := false
	for _, p := range v.GetArray() {
		s := nonEmptyString(p.Get("text"))
		if s == nil {
			s = nonEmptyString(p.Get("summary"))
		}
		if s != nil {
			d.reasoning(s)
			found = true
		}
	}
	return found
}

// parts folds content sent as typed parts. A part with a "text" is content
// ([{"type":"text","text":"…"}], which a few servers return). A "thinking" part is reasoning:
// Mistral's reasoning models stream their thinking as
// {"type":"thinking","thinking":[{"type":"text","text":"…"}]} (a ThinkChunk of text chunks) in
// delta.content, before the answer arrives as plain content; its thinking is also accepted as a
// plain string. Other part types (images, references) generate no text.
func (d *openAI) parts(ps []*fastjson.Value) (content, reasoning bool) {
	for _, p := range ps {
		if string(p.GetStringBytes("type")) == "thinking" {
			th := p.Get("thinking")
			if s := nonEmptyString(th); s != nil {
				d.reasoning(s)
				reasoning = true
			}
			for _, t := range th.GetArray() {
				if s := nonEmptyString(t.Get("text")); s != nil {
					d.reasoning(s)
					reasoning = true
				}
			}
			continue
		}
		if s := nonEmptyString(p.Get("text")); s != nil {
			d.text(s)
			content = true
		}
	}
	return content, reasoning
}

// function folds a tool call's function object ({"name": …, "arguments": …}) and reports whether
// it carried a name or argument text.
func (d *openAI) function(f *fastjson.Value) bool {
	if f == nil || f.Type() != fastjson.TypeObject {
		return false
	}
	name := nonEmptyString(f.Get("name"))
	if name != nil {
		d.text(name)
	}
	args := nonEmptyString(f.Get("arguments"))
	if args != nil {
		d.text(args)
	}
	if name == nil && args == nil {
		return false
	}
	d.res.ToolCalls = true
	return true
}

// Interface guards.
var (
	_ ResponseDecoder = (*openAI)(nil)
	_ TextLimiter     = (*openAI)(nil)
)
