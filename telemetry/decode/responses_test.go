package decode

import "testing"

func TestResponsesEvents(t *testing.T) {
	t.Parallel()
	rd := func(typ, delta string) ev {
		return te(typ, `{"type":"`+typ+`","item_id":"i","output_index":0,"content_index":0,"delta":`+delta+`,"sequence_number":4}`)
	}
	const usage = `"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":29}`
	final := func(typ, status, extra string) ev {
		return te(typ, `{"type":"`+typ+`","sequence_number":9,"response":{"id":"r","object":"response","status":"`+status+`","model":"gpt-x",`+usage+extra+`}}`)
	}
	u := Usage{InputTokens: 9, OutputTokens: 20, ReasoningTokens: 12, CachedTokens: 4}
	runFormatRows(t, NewResponses, []formatRow{
		{
			name:   "lifecycle is not content",
			reason: "TTFT is the first delta, not response.created (docs/metrics.md: TTFT is the first content event)",
			events: []ev{
				te("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","model":"gpt-x","usage":null}}`),
				te("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","content":[]}}`),
				te("response.content_part.added", `{"type":"response.content_part.added","part":{"type":"output_text","text":""}}`),
			},
			kinds: []Kind{Other, Other, Other},
			want:  xview{view: view{Model: "gpt-x", Usage: NoUsage}},
		},
		{
			name:   "output text",
			reason: "a non-empty output_text delta is content; an empty one is not; the .done event repeats text already counted",
			events: []ev{
				rd("response.output_text.delta", `"Hi"`),
				rd("response.output_text.delta", `""`),
				te("response.output_text.done", `{"type":"response.output_text.done","text":"Hi"}`),
			},
			kinds: []Kind{Content, Other, Other},
			want:  xview{view: view{Choices: 1, ContentEvents: 1, Text: "Hi"}},
		},
		{
			name:   "reasoning",
			reason: "reasoning text and reasoning summaries count for TTFT but not TTFO",
			events: []ev{rd("response.reasoning_summary_text.delta", `"**Plan**"`), rd("response.reasoning_text.delta", `" step"`)},
			kinds:  []Kind{Reasoning, Reasoning},
			want:   xview{view: view{Choices: 1, ReasoningEvents: 2, ReasoningText: "**Plan** step"}},
		},
		{
			name:   "refusal",
			reason: "a refusal is output",
			events: []ev{rd("response.refusal.delta", `"I can't"`)},
			kinds:  []Kind{Content},
			want:   xview{view: view{Choices: 1, ContentEvents: 1, Refusal: true, Text: "I can't"}},
		},
		{
			name:   "function call",
			reason: "the call's name when its item opens, then argument fragments, all content and tool calls",
			events: []ev{
				te("response.output_item.added", `{"type":"response.output_item.added","item":{"type":"function_call","name":"f","arguments":""}}`),
				rd("response.function_call_arguments.delta", `"{\"a\":"`),
				rd("response.function_call_arguments.delta", `"1}"`),
			},
			kinds: []Kind{Content, Content, Content},
			want:  xview{view: view{Choices: 1, ContentEvents: 3, ToolCalls: true, Text: `f{"a":1}`}},
		},
		{
			name:   "audio",
			reason: "audio deltas are generated output but base64, not text for the tokenizer",
			events: []ev{rd("response.audio.delta", `"UklGRg=="`), rd("response.audio.transcript.delta", `"Hello"`)},
			kinds:  []Kind{Content, Content},
			want:   xview{view: view{Choices: 1, ContentEvents: 2, Text: "Hello"}},
		},
		{
			name:   "event name only",
			reason: "data without a type is classified by the SSE event name",
			events: []ev{te("response.output_text.delta", `{"delta":"x"}`)},
			kinds:  []Kind{Content},
			want:   xview{view: view{Choices: 1, ContentEvents: 1, Text: "x"}},
		},
		{
			name:   "completed",
			reason: "response.completed ends the stream (no [DONE] in this API) and carries the only usage",
			events: []ev{final("response.completed", "completed", "")},
			kinds:  []Kind{Done},
			want:   xview{view: view{Model: "gpt-x", HasUsage: true, Usage: u, FinishReason: "completed"}, Ended: true},
		},
		{
			name:   "incomplete",
			reason: "a response cut by max_output_tokens is complete as a stream; the reason is the finish reason",
			events: []ev{final("response.incomplete", "incomplete", `,"incomplete_details":{"reason":"max_output_tokens"}`)},
			kinds:  []Kind{Done},
			want:   xview{view: view{Model: "gpt-x", HasUsage: true, Usage: u, FinishReason: "max_output_tokens"}, Ended: true},
		},
		{
			name:   "failed",
			reason: "response.failed is an error, with the response's error code and message",
			events: []ev{final("response.failed", "failed", `,"error":{"code":"server_error","message":"The model failed"}`)},
			kinds:  []Kind{Error},
			want: xview{view: view{Model: "gpt-x", HasUsage: true, Usage: u, FinishReason: "failed",
				ErrorType: "server_error", ErrorMessage: "The model failed"}},
		},
		{
			name:   "failed without error",
			reason: "a failed response is an error even when it says nothing more",
			events: []ev{te("response.failed", `{"type":"response.failed","response":{"status":"failed","error":null}}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{FinishReason: "failed", ErrorMessage: "response failed"}},
		},
		{
			name:   "error event",
			reason: "the error event is flat: code and message beside type",
			events: []ev{te("error", `{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "rate_limit_exceeded", ErrorMessage: "Slow down"}},
		},
		{
			name:   "error in data only",
			reason: "a flat error without the SSE event name",
			events: []ev{d(`{"type":"error","code":429,"message":"Slow down"}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "429", ErrorMessage: "Slow down"}},
		},
		{
			name:   "zero usage ignored",
			reason: "an all-zero usage is a placeholder, not a count (see openAIUsage)",
			events: []ev{te("response.completed", `{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0}}}`)},
			kinds:  []Kind{Done},
			want:   xview{view: view{FinishReason: "completed"}, Ended: true},
		},
		{
			name:   "malformed",
			reason: "data that is not a JSON object",
			events: []ev{d(`{"type":`), d(`"x"`)},
			kinds:  []Kind{Malformed, Malformed},
			want:   xview{view: view{Malformed: 2}},
		},
	})
}

func TestResponsesBody(t *testing.T) {
	t.Parallel()
	runFormatRows(t, NewResponses, []formatRow{
		{
			name:   "response",
			reason: "a non-streaming response: reasoning summary, message text, a function call, usage",
			body: `{"id":"r","object":"response","status":"completed","model":"gpt-x","error":null,"incomplete_details":null,"output":[` +
				`{"type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}]},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]},` +
				`{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}],` +
				`"usage":{"input_tokens":5,"output_tokens":7,"total_tokens":12,"output_tokens_details":{"reasoning_tokens":3},"input_tokens_details":{"cached_tokens":0}}}`,
			kinds: []Kind{Content},
			want: xview{view: view{Model: "gpt-x", HasUsage: true, FinishReason: "completed", Choices: 1, ContentEvents: 1,
				ToolCalls: true, Text: "Hif{}", ReasoningText: "Plan.",
				Usage: Usage{InputTokens: 5, OutputTokens: 7, ReasoningTokens: 3, CachedTokens: 0}}},
		},
		{
			name:   "refusal body",
			reason: "a refusal content part is output",
			body:   `{"status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"No."}]}]}`,
			kinds:  []Kind{Content},
			want:   xview{view: view{FinishReason: "completed", Choices: 1, ContentEvents: 1, Refusal: true, Text: "No."}},
		},
		{
			name:   "error body",
			reason: "an HTTP error body in OpenAI's shape",
			body:   `{"error":{"message":"Invalid model","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "invalid_request_error", ErrorMessage: "Invalid model"}},
		},
	})
}
