package decode

import "testing"

func TestAnthropicEvents(t *testing.T) {
	t.Parallel()
	const start = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}`
	cd := func(delta string) ev {
		return te("content_block_delta", `{"type":"content_block_delta","index":0,"delta":`+delta+`}`)
	}
	cs := func(block string) ev {
		return te("content_block_start", `{"type":"content_block_start","index":0,"content_block":`+block+`}`)
	}
	runFormatRows(t, NewAnthropic, []formatRow{
		{
			name:   "message_start",
			reason: "the input side of usage is known at the start; the whole prompt is input+cache read+cache write; message_start's output_tokens is a placeholder",
			events: []ev{te("message_start", start)},
			kinds:  []Kind{Other},
			want:   xview{view: view{Model: "claude-x", HasUsage: true, Usage: Usage{InputTokens: 115, OutputTokens: -1, ReasoningTokens: -1, CachedTokens: 100, CacheWriteTokens: 5}}},
		},
		{
			name:   "text delta",
			reason: "a non-empty text_delta is content",
			events: []ev{cd(`{"type":"text_delta","text":"Hi"}`), cd(`{"type":"text_delta","text":""}`)},
			kinds:  []Kind{Content, Other},
			want:   xview{view: view{Choices: 1, ContentEvents: 1, Text: "Hi"}},
		},
		{
			name:   "thinking delta",
			reason: "thinking counts for TTFT but not TTFO; its signature is not text",
			events: []ev{cd(`{"type":"thinking_delta","thinking":"hmm"}`), cd(`{"type":"signature_delta","signature":"abc"}`)},
			kinds:  []Kind{Reasoning, Other},
			want:   xview{view: view{Choices: 1, ReasoningEvents: 1, ReasoningText: "hmm"}},
		},
		{
			name:   "tool use",
			reason: "the tool name at the block start is generated output; the empty first partial_json is not; argument fragments are content and text",
			events: []ev{
				cs(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}`),
				cd(`{"type":"input_json_delta","partial_json":""}`),
				cd(`{"type":"input_json_delta","partial_json":"{\"city\":1}"}`),
			},
			kinds: []Kind{Content, Other, Content},
			want:  xview{view: view{Choices: 1, ContentEvents: 2, ToolCalls: true, Text: `get_weather{"city":1}`}},
		},
		{
			name:   "empty block starts",
			reason: "text and thinking blocks open empty; opening them generates nothing",
			events: []ev{cs(`{"type":"text","text":""}`), cs(`{"type":"thinking","thinking":"","signature":""}`)},
			kinds:  []Kind{Other, Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "failed compaction",
			reason: "a compaction that produced no summary (null content, only encrypted_content) generated nothing",
			events: []ev{cs(`{"type":"compaction","content":null}`), cd(`{"type":"compaction_delta","content":null,"encrypted_content":"opaque"}`)},
			kinds:  []Kind{Other, Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "prefilled compaction",
			reason: "a compaction block may open with its whole summary: generated before the answer, like thinking",
			events: []ev{cs(`{"type":"compaction","content":"sum"}`)},
			kinds:  []Kind{Reasoning},
			want:   xview{view: view{Choices: 1, ReasoningEvents: 1, ReasoningText: "sum"}},
		},
		{
			name:   "iterations without some counts",
			reason: "each count is summed over the iterations that report it; one no iteration reports keeps its earlier value",
			events: []ev{te("message_start", start), te("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5,"iterations":[{"type":"compaction","input_tokens":50,"output_tokens":7},{"type":"message","input_tokens":10,"output_tokens":5}]}}`)},
			kinds:  []Kind{Other, Other},
			want: xview{view: view{Model: "claude-x", HasUsage: true, FinishReason: "end_turn",
				Usage: Usage{InputTokens: 165, OutputTokens: 12, ReasoningTokens: -1, CachedTokens: 100, CacheWriteTokens: 5}}},
		},
		{
			name:   "redacted thinking",
			reason: "a redacted_thinking block arrives whole and encrypted: reasoning without text",
			events: []ev{cs(`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}`)},
			kinds:  []Kind{Reasoning},
			want:   xview{view: view{Choices: 1, ReasoningEvents: 1}},
		},
		{
			name:   "message_delta usage is cumulative",
			reason: "each message_delta repeats the output count so far; the last wins",
			events: []ev{
				te("message_start", start),
				te("message_delta", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`),
				te("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":15}}`),
				te("message_stop", `{"type":"message_stop"}`),
			},
			kinds: []Kind{Other, Other, Other, Done},
			want: xview{view: view{Model: "claude-x", HasUsage: true, FinishReason: "max_tokens",
				Usage: Usage{InputTokens: 115, OutputTokens: 15, ReasoningTokens: -1, CachedTokens: 100, CacheWriteTokens: 5}}, Ended: true},
		},
		{
			name:   "input counts in message_delta",
			reason: "some backends report input and cache counts only at the end (Envoy AI Gateway #2290)",
			events: []ev{te("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":2}}`)},
			kinds:  []Kind{Other},
			want: xview{view: view{HasUsage: true, FinishReason: "end_turn",
				Usage: Usage{InputTokens: 10, OutputTokens: 2, ReasoningTokens: -1, CachedTokens: 3}}},
		},
		{
			name:   "refusal",
			reason: "stop_reason refusal marks the response as refused",
			events: []ev{te("message_delta", `{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":0}}`)},
			kinds:  []Kind{Other},
			want:   xview{view: view{HasUsage: true, FinishReason: "refusal", Refusal: true, Usage: Usage{InputTokens: -1, OutputTokens: 0, ReasoningTokens: -1, CachedTokens: -1}}},
		},
		{
			name:   "ping and untyped data",
			reason: "ping is a keep-alive; the SSE event name stands in when data has no type",
			events: []ev{te("ping", `{"type": "ping"}`), te("message_stop", `{}`)},
			kinds:  []Kind{Other, Done},
			want:   xview{view: fresh(), Ended: true},
		},
		{
			name:   "error event",
			reason: "an overloaded error inside the stream",
			events: []ev{te("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}},
		},
		{
			name:   "error in data only",
			reason: "a proxy that drops event names still sends type error",
			events: []ev{d(`{"type":"error","error":{"type":"api_error","message":"boom"}}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "api_error", ErrorMessage: "boom"}},
		},
		{
			name:   "malformed and empty",
			reason: "data that is not a JSON object is counted; an empty event is nothing",
			events: []ev{d(`{"type":"content_block_delta"`), d(`[1]`), d(``)},
			kinds:  []Kind{Malformed, Malformed, Other},
			want:   xview{view: view{Usage: NoUsage, Malformed: 2}},
		},
	})
}

func TestAnthropicBody(t *testing.T) {
	t.Parallel()
	runFormatRows(t, NewAnthropic, []formatRow{
		{
			name:   "message",
			reason: "a non-streaming message: all blocks, usage with cache, stop_reason",
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[` +
				`{"type":"thinking","thinking":"Let me think.","signature":"s"},{"type":"text","text":"Hi!"},` +
				`{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,` +
				`"usage":{"input_tokens":4,"cache_creation_input_tokens":6,"cache_read_input_tokens":0,"output_tokens":30}}`,
			kinds: []Kind{Content},
			want: xview{view: view{Model: "claude-x", HasUsage: true, FinishReason: "tool_use", Choices: 1, ContentEvents: 1,
				ToolCalls: true, Text: `Hi!f{"a":1}`, ReasoningText: "Let me think.",
				Usage: Usage{InputTokens: 10, OutputTokens: 30, ReasoningTokens: -1, CachedTokens: 0, CacheWriteTokens: 6}}},
		},
		{
			name:   "error body",
			reason: "an HTTP error body",
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`,
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "invalid_request_error", ErrorMessage: "max_tokens: Field required"}},
		},
		{
			name:   "not json",
			reason: "a body that is not a JSON object is malformed",
			body:   `<html>`,
			kinds:  []Kind{Malformed},
			want:   xview{view: view{Malformed: 1}},
		},
	})
}
