package decode

import "testing"

func TestOllamaEvents(t *testing.T) {
	t.Parallel()
	const final = `,"done":true,"done_reason":"length","total_duration":523591273,"load_duration":264708233,"prompt_eval_count":5,"prompt_eval_duration":2883117,"eval_count":32,"eval_duration":254738017}`
	timings := ServerTimings{Format: FormatOllama, PromptEvalCount: 5, EvalCount: 32, LoadDuration: 264708233, PromptEvalDuration: 2883117,
		EvalDuration: 254738017, TotalDuration: 523591273}
	usage := Usage{InputTokens: 5, OutputTokens: 32, ReasoningTokens: -1, CachedTokens: -1}
	chat := func(msg, tail string) ev {
		return d(`{"model":"m","created_at":"2026-11-30T19:33:42.35Z","message":{"role":"assistant",` + msg + `}` + tail)
	}
	runFormatRows(t, NewOllamaChat, []formatRow{
		{
			name:   "chat content",
			reason: "non-empty message.content is content; Ollama repeats the role in every line",
			events: []ev{chat(`"content":"Once"`, `,"done":false}`), chat(`"content":""`, `,"done":false}`)},
			kinds:  []Kind{Content, Other},
			want:   xview{view: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "Once"}},
		},
		{
			name:   "chat thinking",
			reason: "message.thinking alone is reasoning",
			events: []ev{chat(`"content":"","thinking":"Hmm"`, `,"done":false}`)},
			kinds:  []Kind{Reasoning},
			want:   xview{view: view{Model: "m", Choices: 1, ReasoningEvents: 1, ReasoningText: "Hmm"}},
		},
		{
			name:   "tool call",
			reason: "Ollama sends a tool call whole, arguments as an object; name and arguments are the call's text",
			events: []ev{chat(`"content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]`, `,"done":false}`)},
			kinds:  []Kind{Content},
			want:   xview{view: view{Model: "m", Choices: 1, ContentEvents: 1, ToolCalls: true, Text: `get_weather{"city":"Paris"}`}},
		},
		{
			name:   "final line",
			reason: "done:true ends the stream with the counts and the server's own durations (ns)",
			events: []ev{chat(`"content":""`, final)},
			kinds:  []Kind{Done},
			want: xview{view: view{Model: "m", HasUsage: true, Usage: usage, FinishReason: "length", Choices: 1},
				Ended: true, ServerTimings: timings},
		},
		{
			name:   "final line with text",
			reason: "a final line that still carries text is content, so its time counts, and ends the stream",
			events: []ev{d(`{"model":"m","response":"!"` + final)},
			kinds:  []Kind{Content},
			want: xview{view: view{Model: "m", HasUsage: true, Usage: usage, FinishReason: "length", Choices: 1,
				ContentEvents: 1, Text: "!"}, Ended: true, ServerTimings: timings},
		},
		{
			name:   "generate shape",
			reason: "the chat decoder reads /api/generate lines too: response is content, thinking reasoning",
			events: []ev{d(`{"model":"m","response":"","thinking":"t","done":false}`), d(`{"model":"m","response":"Hi","done":false}`)},
			kinds:  []Kind{Reasoning, Content},
			want:   xview{view: view{Model: "m", Choices: 1, ContentEvents: 1, ReasoningEvents: 1, Text: "Hi", ReasoningText: "t"}},
		},
		{
			name:   "cached prompt",
			reason: "Ollama omits prompt_eval_count when the whole prompt came from its cache: input unknown, output known",
			events: []ev{d(`{"model":"m","response":"","done":true,"done_reason":"stop","eval_count":3}`)},
			kinds:  []Kind{Done},
			want: xview{view: view{Model: "m", HasUsage: true, FinishReason: "stop", Choices: 1,
				Usage: Usage{InputTokens: -1, OutputTokens: 3, ReasoningTokens: -1, CachedTokens: -1}},
				Ended: true, ServerTimings: ServerTimings{Format: FormatOllama, EvalCount: 3}},
		},
		{
			name:   "done false is not the end",
			reason: "only the JSON true ends the stream",
			events: []ev{d(`{"model":"m","response":"","done":"true"}`)},
			kinds:  []Kind{Other},
			want:   xview{view: view{Model: "m", Usage: NoUsage}},
		},
		{
			name:   "error line",
			reason: "Ollama reports errors as {\"error\":\"…\"}, also in the middle of a stream",
			events: []ev{d(`{"error":"model requires more system memory (8.0 GiB) than is available (4.0 GiB)"}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorMessage: "model requires more system memory (8.0 GiB) than is available (4.0 GiB)"}},
		},
		{
			name:   "malformed and blank",
			reason: "a line that is not a JSON object; a blank line",
			events: []ev{d(`{"model":`), d(` `)},
			kinds:  []Kind{Malformed, Other},
			want:   xview{view: view{Malformed: 1}},
		},
	})
}

func TestOllamaBody(t *testing.T) {
	t.Parallel()
	runFormatRows(t, NewOllamaGenerate, []formatRow{
		{
			name:   "generate stream false",
			reason: "a stream:false body is the final line with the whole text",
			body: `{"model":"m","created_at":"x","response":"Hello!","thinking":"greet","done":true,"done_reason":"stop","context":[1,2],` +
				`"total_duration":9,"load_duration":1,"prompt_eval_count":4,"prompt_eval_duration":2,"eval_count":3,"eval_duration":5}`,
			kinds: []Kind{Content},
			want: xview{view: view{Model: "m", HasUsage: true, FinishReason: "stop", Choices: 1, ContentEvents: 1,
				Text: "Hello!", ReasoningText: "greet", Usage: Usage{InputTokens: 4, OutputTokens: 3, ReasoningTokens: -1, CachedTokens: -1}},
				Ended: true, ServerTimings: ServerTimings{Format: FormatOllama, PromptEvalCount: 4, EvalCount: 3, LoadDuration: 1, PromptEvalDuration: 2, EvalDuration: 5, TotalDuration: 9}},
		},
		{
			name:   "chat stream false",
			reason: "the generate decoder reads a chat body too",
			body:   `{"model":"m","message":{"role":"assistant","content":"Hi"},"done":true,"done_reason":"stop"}`,
			kinds:  []Kind{Content},
			want:   xview{view: view{Model: "m", FinishReason: "stop", Choices: 1, ContentEvents: 1, Text: "Hi"}, Ended: true},
		},
		{
			name:   "error body",
			reason: "an HTTP error body",
			body:   `{"error":"model \"nope\" not found, try pulling it first"}`,
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorMessage: `model "nope" not found, try pulling it first`}},
		},
	})
}
