package decode

import (
	"github.com/valyala/fastjson"
)

// APIAnthropicMessages is the API name of Anthropic's Messages API (POST /v1/messages), which
// Anthropic, Bedrock and Vertex gateways, LiteLLM, vLLM and Ollama serve.
const APIAnthropicMessages = "anthropic.messages"

// NewAnthropic returns a decoder for Messages API responses, streamed (named SSE events) or not
// (a message body).
//
// Events are told apart by the "type" member of their data, or by the SSE event name when the
// data has none. content_block_delta is Content for a non-empty text_delta, or input_json_delta
// (tool-call arguments, which also sets ToolCalls); it is Reasoning for a non-empty
// thinking_delta; signature_delta and citations_delta generate no text and are Other.
// content_block_start is Content when it opens a tool_use, server_tool_use or mcp_tool_use
// block (a call to a client tool, a server tool, an MCP server's tool) with a name (the name is
// generated output, as in NewOpenAIChat) or a text block that already holds text, and
// Reasoning when it opens a redacted_thinking block (reasoning the server sends whole and
// encrypted) or a compaction block that already holds its summary (see Compaction below);
// compaction_delta is Reasoning when its content is non-empty. message_stop is Done and sets Ended; an error event is Error; message_start,
// message_delta, content_block_stop, ping and event types added later are Other.
//
// Usage. message_start carries the input side: InputTokens is input_tokens plus
// cache_read_input_tokens plus cache_creation_input_tokens, because Anthropic's input_tokens
// counts only the tokens that were neither read from nor written to the prompt cache, while
// Usage follows OpenAI (and the OpenTelemetry GenAI conventions), where the input count is the
// whole prompt and CachedTokens (cache_read_input_tokens) a part of it. message_delta carries
// the output count, cumulative, so the last one wins; the output_tokens of message_start is a
// placeholder (often 1) and is ignored, so a stream cut before its message_delta reports
// OutputTokens -1 and falls back to the tokenizer instead of claiming one token. Input and cache
// counts that a message_delta repeats (some backends send them only there) replace the earlier
// ones. Anthropic counts thinking inside output_tokens; ReasoningTokens is the part it reports
// as usage.output_tokens_details.thinking_tokens (on message_delta), -1 when it reports none.
//
// Compaction. When the server compacts the context before answering (the compaction beta), it
// streams the summary it generated as a compaction block (content_block_start of type
// "compaction", then compaction_delta events carrying content), before the answer. The summary
// is generated output that is not the answer, like thinking: a non-empty one is Reasoning (it
// counts for TTFT, not TTFO) and its text is kept as ReasoningText; a compaction that failed
// (null content, only encrypted_content) generates nothing and is Other. Such a response's usage
// has an iterations array, one entry per sampling pass ("compaction", then "message"), and its
// top-level counts leave the compaction pass out; llmtap counts every token the server
// generated and read for the response, so when iterations is present each count is its sum over
// the iterations instead of the top-level value.
//
// FinishReason is the stop_reason as Anthropic names it ("end_turn", "max_tokens",
// "stop_sequence", "tool_use", "pause_turn", "refusal"); "refusal" also sets Refusal.
func NewAnthropic() ResponseDecoder {
	d := &anthropic{}
	d.init(APIAnthropicMessages)
	d.clearCounts()
	return d
}

// anthropic is the decoder NewAnthropic returns. It keeps the three input-side counts apart
// until the end, since they may arrive in different events.
type anthropic struct {
	base
	input, cacheRead, cacheWrite int64
}

// Event implements ResponseDecoder.
func (d *anthropic) Event(typ, data []byte) Kind {
	v, k := d.parseEvent(typ, data)
	if v == nil {
		return k
	}
	t := v.GetStringBytes("type")
	if len(t) == 0 {
		t = typ
	}
	switch string(t) {
	case "content_block_delta":
		return d.delta(v.Get("delta"))
	case "content_block_start":
		c, r := d.block(v.Get("content_block"))
		return d.classify(c, r)
	case "message_start":
		m := v.Get("message")
		d.setModel(m.GetStringBytes("model"))
		d.usage(last(m, "usage"), false)
	case "message_delta":
		d.stop(v.Get("delta", "stop_reason"))
		d.usage(last(v, "usage"), true)
	case "message_stop":
		d.res.Ended = true
		return Done
	case "error":
		if !d.errorObject(v) {
			d.res.ErrorType, d.res.ErrorMessage = "", cappedString(data, maxErrorMessage)
		}
		return Error
	default:
		if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull && d.errorObject(v) {
			return Error
		}
	}
	return Other
}

// Body implements ResponseDecoder for a complete message body; one with generated text counts
// as one content (or reasoning) event.
func (d *anthropic) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	v := d.object(body)
	if v == nil {
		return Malformed
	}
	if e := v.Get("error"); (e != nil && e.Type() != fastjson.TypeNull) || string(v.GetStringBytes("type")) == "error" {
		if !d.errorObject(v) {
			d.res.ErrorType, d.res.ErrorMessage = "", cappedString(body, maxErrorMessage)
		}
		return Error
	}
	d.setModel(v.GetStringBytes("model"))
	d.usage(last(v, "usage"), true)
	d.stop(v.Get("stop_reason"))
	var content, reasoning bool
	for _, b := range v.GetArray("content") {
		c, r := d.block(b)
		content, reasoning = content || c, reasoning || r
	}
	return d.classify(content, reasoning)
}

// Reset implements ResponseDecoder, keeping the parser and the text buffers.
func (d *anthropic) Reset() {
	d.reset()
	d.clearCounts()
}

func (d *anthropic) clearCounts() { d.input, d.cacheRead, d.cacheWrite = -1, -1, -1 }

// delta folds the delta of a content_block_delta event.
func (d *anthropic) delta(dl *fastjson.Value) Kind {
	if dl == nil {
		return Other
	}
	switch string(dl.GetStringBytes("type")) {
	case "text_delta":
		if s := nonEmptyString(dl.Get("text")); s != nil {
			d.text(s)
			return d.classify(true, false)
		}
	case "thinking_delta":
		if s := nonEmptyString(dl.Get("thinking")); s != nil {
			d.reasoning(s)
			return d.classify(false, true)
		}
	case "compaction_delta":
		if s := nonEmptyString(dl.Get("content")); s != nil {
			d.reasoning(s)
			return d.classify(false, true)
		}
	case "input_json_delta":
		if s := nonEmptyString(dl.Get("partial_json")); s != nil {
			d.text(s)
			d.res.ToolCalls = true
			return d.classify(true, false)
		}
	}
	return Other
}

// block folds a content block: the one a content_block_start opens (usually still empty) or
// one of a message body (complete).
func (d *anthropic) block(b *fastjson.Value) (content, reasoning bool) {
	if b == nil {
		return false, false
	}
	switch string(b.GetStringBytes("type")) {
	case "text":
		if s := nonEmptyString(b.Get("text")); s != nil {
			d.text(s)
			return true, false
		}
	case "thinking":
		if s := nonEmptyString(b.Get("thinking")); s != nil {
			d.reasoning(s)
			return false, true
		}
	case "redacted_thinking":
		return false, true
	case "compaction":
		if s := nonEmptyString(b.Get("content")); s != nil {
			d.reasoning(s)
			return false, true
		}
	case "tool_use", "server_tool_use", "mcp_tool_use":
		name := nonEmptyString(b.Get("name"))
		if name != nil {
			d.text(name)
		}
		args := d.jsonText(b.Get("input"))
		if name != nil || args {
			d.res.ToolCalls = true
			return true, false
		}
	}
	return false, false
}

// stop records a stop_reason.
func (d *anthropic) stop(v *fastjson.Value) {
	if s := nonEmptyString(v); s != nil {
		d.res.FinishReason = internReason(s)
		if d.res.FinishReason == "refusal" {
			d.res.Refusal = true
		}
	}
}

// usage folds a usage object; output tells whether its output_tokens is a real count (body,
// message_delta) rather than message_start's placeholder.
func (d *anthropic) usage(u *fastjson.Value, output bool) {
	if u == nil || u.Type() != fastjson.TypeObject {
		return
	}
	c := usageCounts(u)
	if its := u.GetArray("iterations"); len(its) > 0 {
		c = [4]int64{-1, -1, -1, -1}
		for _, it := range its {
			for k, n := range usageCounts(it) {
				if n >= 0 {
					c[k] = max(c[k], 0) + n
				}
			}
		}
	}
	d.input = countOr(c[0], d.input)
	d.cacheRead = countOr(c[1], d.cacheRead)
	d.cacheWrite = countOr(c[2], d.cacheWrite)
	if output {
		d.res.Usage.OutputTokens = countOr(c[3], d.res.Usage.OutputTokens)
		d.res.Usage.ReasoningTokens = countOr(count(u.Get("output_tokens_details", "thinking_tokens")), d.res.Usage.ReasoningTokens)
	}
	if d.input >= 0 {
		d.res.Usage.InputTokens = d.input + max(d.cacheRead, 0) + max(d.cacheWrite, 0)
	}
	d.res.Usage.CachedTokens = d.cacheRead
	d.res.Usage.CacheWriteTokens = max(d.cacheWrite, 0)
	d.res.HasUsage = d.res.Usage.InputTokens >= 0 || d.res.Usage.OutputTokens >= 0
}

// usageCounts reads the four counts of a usage object (or of one of its iterations): input,
// cache read, cache write and output tokens, -1 for a count it does not hold.
func usageCounts(u *fastjson.Value) [4]int64 {
	return [4]int64{
		count(last(u, "input_tokens")), count(last(u, "cache_read_input_tokens")),
		count(last(u, "cache_creation_input_tokens")), count(last(u, "output_tokens")),
	}
}

// Interface guards.
var (
	_ ResponseDecoder = (*anthropic)(nil)
	_ TextLimiter     = (*anthropic)(nil)
	_ pooled          = (*anthropic)(nil)
)
