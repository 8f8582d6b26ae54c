package decode

import (
	"time"

	"github.com/valyala/fastjson"
)

// base is the state and bookkeeping every decoder shares: a fastjson parser held for the
// decoder's lifetime (so parsing reuses its buffers and value cache), the result, the text cap,
// and a scratch buffer for re-serialising tool-call arguments that arrive as JSON objects (and,
// in the OpenAI decoder's fast path, for unescaping strings). The decoders embed it and add
// their own rules in Event and Body.
type base struct {
	api     string
	p       fastjson.Parser
	res     Result
	maxText int
	// model is the last model name seen, kept across Reset so that a decoder serving one model
	// copies the name once in its life rather than once per response.
	model   string
	scratch []byte
}

func (b *base) init(api string) {
	b.api, b.maxText = api, MaxText
	b.res.Usage = NoUsage
}

// Result implements ResponseDecoder.
func (b *base) Result() *Result { return &b.res }

// reset clears the result, keeping the text buffers.
func (b *base) reset() {
	b.res = Result{Usage: NoUsage, Text: b.res.Text[:0], ReasoningText: b.res.ReasoningText[:0]}
}

// SetMaxText implements TextLimiter.
func (b *base) SetMaxText(n int) { b.maxText = max(n, 0) }

func (b *base) apiName() string { return b.api }

// shrink drops buffers grown past limit, so a decoder parked in a pool after a huge response
// does not pin that memory, and restores the default text cap.
func (b *base) shrink(limit int) {
	if cap(b.res.Text) > limit {
		b.res.Text = nil
	}
	if cap(b.res.ReasoningText) > limit {
		b.res.ReasoningText = nil
	}
	if cap(b.scratch) > limit {
		b.scratch = nil
	}
	b.maxText = MaxText
}

// object parses data as a JSON object; anything else counts as Malformed and returns nil.
func (b *base) object(data []byte) *fastjson.Value {
	v, err := b.p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		b.res.Malformed++
		return nil
	}
	return v
}

// setModel records the model name without allocating when it is the one seen last.
func (b *base) setModel(m []byte) {
	if len(m) == 0 {
		return
	}
	if string(m) != b.model {
		b.model = string(m)
	}
	b.res.Model = b.model
}

// text appends generated output text under the cap.
func (b *base) text(s []byte) {
	var cut bool
	b.res.Text, cut = appendCapped(b.res.Text, s, b.maxText)
	b.res.TextTruncated = b.res.TextTruncated || cut
}

// reasoning appends reasoning text under the cap.
func (b *base) reasoning(s []byte) {
	var cut bool
	b.res.ReasoningText, cut = appendCapped(b.res.ReasoningText, s, b.maxText)
	b.res.TextTruncated = b.res.TextTruncated || cut
}

// jsonText appends a JSON value (tool-call arguments sent as an object) to the output text as
// the server serialised it, and reports whether it held anything beyond an empty object.
func (b *base) jsonText(v *fastjson.Value) bool {
	if v == nil {
		return false
	}
	if v.Type() == fastjson.TypeString {
		s := v.GetStringBytes()
		b.text(s)
		return len(s) > 0
	}
	b.scratch = v.MarshalTo(b.scratch[:0])
	if string(b.scratch) == "{}" || string(b.scratch) == "null" {
		return false
	}
	b.text(b.scratch)
	return true
}

// classify counts an event by what it carried and returns its kind. Every decoder of these
// APIs produces one output sequence, so a response with any generated text has one choice.
func (b *base) classify(content, reasoning bool) Kind {
	if content || reasoning {
		b.res.Choices = 1
	}
	return eventKind(&b.res, content, reasoning)
}

// eventKind counts an event in res by what it carried (content before reasoning) and returns
// its kind.
func eventKind(res *Result, content, reasoning bool) Kind {
	switch {
	case content:
		res.ContentEvents++
		return Content
	case reasoning:
		res.ReasoningEvents++
		return Reasoning
	}
	return Other
}

// errorObject records the error v holds (see errorFields) and reports whether it held one.
func (b *base) errorObject(v *fastjson.Value) bool {
	typ, msg, ok := errorFields(v)
	if ok {
		b.res.ErrorType, b.res.ErrorMessage = typ, msg
	}
	return ok
}

// sseError records an error announced by the SSE event type "error". The data is usually one of
// the JSON error shapes; when it is not, the raw data is the message.
func (b *base) sseError(data []byte) {
	if v, err := b.p.ParseBytes(data); err == nil && b.errorObject(v) {
		return
	}
	b.res.ErrorType, b.res.ErrorMessage = "", cappedString(data, maxErrorMessage)
}

// internReason returns a finish or stop reason as a string, without allocating for the reasons
// the servers of this package actually send (each API keeps its own vocabulary: Anthropic's
// "end_turn", TGI's "eos_token", Ollama's "stop"; they are not mapped onto OpenAI's).
func internReason(b []byte) string {
	switch string(b) {
	case "end_turn":
		return "end_turn"
	case "max_tokens":
		return "max_tokens"
	case "stop_sequence":
		return "stop_sequence"
	case "tool_use":
		return "tool_use"
	case "pause_turn":
		return "pause_turn"
	case "refusal":
		return "refusal"
	case "eos_token":
		return "eos_token"
	case "completed":
		return "completed"
	case "incomplete":
		return "incomplete"
	case "failed":
		return "failed"
	case "cancelled":
		return "cancelled"
	case "max_output_tokens":
		return "max_output_tokens"
	case "load":
		return "load"
	case "unload":
		return "unload"
	}
	return internFinish(b)
}

// nanos reads a duration in nanoseconds (Ollama's unit); anything that is not a non-negative
// number is zero, "not reported".
func nanos(v *fastjson.Value) time.Duration {
	n := count(v)
	if n < 0 {
		return 0
	}
	return time.Duration(n)
}

// countOr returns c when it is a known count, else fallback.
func countOr(c, fallback int64) int64 {
	if c >= 0 {
		return c
	}
	return fallback
}

// parseEvent does what every JSON-event decoder does first: an SSE event of type "error" is an
// Error (its data kept as the message), an empty event a keep-alive (Other), and anything else
// must parse as a JSON object (else Malformed). It returns the object, or nil and the kind the
// event already is.
func (b *base) parseEvent(typ, data []byte) (*fastjson.Value, Kind) {
	data = trimSpace(data)
	if string(typ) == "error" {
		b.sseError(data)
		return nil, Error
	}
	if len(data) == 0 {
		return nil, Other
	}
	v := b.object(data)
	if v == nil {
		return nil, Malformed
	}
	return v, Other
}
