package decode

import (
	"fmt"
	"slices"
	"testing"
)

// ev is one event of a table row: an optional SSE type and the data.
type ev struct{ typ, data string }

func d(data string) ev { return ev{data: data} }

// chunk builds a chat.completion.chunk with the given choices JSON.
func chunk(choices string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[` + choices + `]}`
}

// delta builds one streamed chat choice.
func delta(index int, delta, finish string) string {
	return fmt.Sprintf(`{"index":%d,"delta":%s,"finish_reason":%s}`, index, delta, finish)
}

type eventRow struct {
	name   string
	reason string
	api    string // APIOpenAIChat when empty
	events []ev
	kinds  []Kind
	want   view // Usage left zero means NoUsage
}

func runEventRows(t *testing.T, rows []eventRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dec := NewOpenAIChat()
			if r.api == APIOpenAICompletions {
				dec = NewOpenAICompletions()
			}
			var kinds []Kind
			for _, e := range r.events {
				kinds = append(kinds, dec.Event([]byte(e.typ), []byte(e.data)))
			}
			if !slices.Equal(kinds, r.kinds) {
				t.Errorf("%s\nkinds = %v, want %v", r.reason, kinds, r.kinds)
			}
			want := r.want
			if want.Usage == (Usage{}) {
				want.Usage = NoUsage
			}
			if got := viewOf(dec.Result()); got != want {
				t.Errorf("%s\nresult = %+v\nwant     %+v", r.reason, got, want)
			}
		})
	}
}

func TestOpenAIChatEvents(t *testing.T) {
	t.Parallel()
	const usage = `"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,` +
		`"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}`
	runEventRows(t, []eventRow{
		{
			name:   "role-only first chunk",
			reason: "a delta with only a role and empty content generates nothing, so it must not start TTFT",
			events: []ev{d(chunk(delta(0, `{"role":"assistant","content":""}`, "null")))},
			kinds:  []Kind{Other},
			want:   view{Model: "m", Choices: 1},
		},
		{
			name:   "ollama repeats the role",
			reason: "Ollama sends role:assistant in every delta; content next to it is still content",
			events: []ev{
				d(chunk(delta(0, `{"role":"assistant","content":"Once"}`, "null"))),
				d(chunk(delta(0, `{"role":"assistant","content":" upon"}`, "null"))),
			},
			kinds: []Kind{Content, Content},
			want:  view{Model: "m", Choices: 1, ContentEvents: 2, Text: "Once upon"},
		},
		{
			name:   "multi-token chunk",
			reason: "a server that batches tokens sends several per event; it is still one content event",
			events: []ev{d(chunk(delta(0, `{"content":"Hello there, world"}`, "null")))},
			kinds:  []Kind{Content},
			want:   view{Model: "m", Choices: 1, ContentEvents: 1, Text: "Hello there, world"},
		},
		{
			name:   "reasoning starts, then content",
			reason: "reasoning-only deltas are Reasoning (TTFT, not TTFO); both field spellings count; the answer is Content",
			events: []ev{
				d(chunk(delta(0, `{"role":"assistant","content":null,"reasoning_content":"think"}`, "null"))),
				d(chunk(delta(0, `{"reasoning":" more"}`, "null"))),
				d(chunk(delta(0, `{"content":"42"}`, "null"))),
			},
			kinds: []Kind{Reasoning, Reasoning, Content},
			want: view{Model: "m", Choices: 1, ContentEvents: 1, ReasoningEvents: 2,
				Text: "42", ReasoningText: "think more"},
		},
		{
			name:   "reasoning and content in one delta",
			reason: "an event with any non-reasoning content is Content, and both texts are kept",
			events: []ev{d(chunk(delta(0, `{"reasoning_content":"r","content":"c"}`, "null")))},
			kinds:  []Kind{Content},
			want:   view{Model: "m", Choices: 1, ContentEvents: 1, Text: "c", ReasoningText: "r"},
		},
		{
			name:   "tool-call-only response",
			reason: "the name-only first tool delta is Content (it is generated output), argument fragments are Content, name and arguments are kept as text",
			events: []ev{
				d(chunk(delta(0, `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"))),
				d(chunk(delta(0, `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\""}}]}`, "null"))),
				d(chunk(delta(0, `{"tool_calls":[{"index":0,"function":{"arguments":":\"Paris\"}"}}]}`, "null"))),
				d(chunk(delta(0, `{}`, `"tool_calls"`))),
			},
			kinds: []Kind{Content, Content, Content, Other},
			want: view{Model: "m", Choices: 1, ContentEvents: 3, ToolCalls: true,
				Text: `get_weather{"city":"Paris"}`, FinishReason: "tool_calls"},
		},
		{
			name:   "tool call without name or arguments",
			reason: "a tool-call delta carrying only an id and a type generates no text",
			events: []ev{d(chunk(delta(0, `{"tool_calls":[{"index":0,"id":"call_1","type":"function"}]}`, "null")))},
			kinds:  []Kind{Other},
			want:   view{Model: "m", Choices: 1},
		},
		{
			name:   "legacy function_call",
			reason: "pre-tools servers stream delta.function_call; it is a tool call",
			events: []ev{d(chunk(delta(0, `{"function_call":{"name":"f","arguments":"{}"}}`, "null")))},
			kinds:  []Kind{Content},
			want:   view{Model: "m", Choices: 1, ContentEvents: 1, ToolCalls: true, Text: "f{}"},
		},
		{
			name:   "refusal",
			reason: "a refusal is generated output (Content) and is flagged",
			events: []ev{d(chunk(delta(0, `{"content":null,"refusal":"I can't help with that."}`, "null")))},
			kinds:  []Kind{Content},
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Refusal: true,
				Text: "I can't help with that."},
		},
		{
			name:   "usage-only last chunk",
			reason: "the include_usage chunk has choices:[] and is Other; every usage field maps",
			events: []ev{
				d(`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}`),
				d(`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],` + usage + `}`),
				d("[DONE]"),
			},
			kinds: []Kind{Content, Other, Done},
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "a", HasUsage: true,
				Usage: Usage{InputTokens: 9, OutputTokens: 2, ReasoningTokens: 1, CachedTokens: 4}},
		},
		{
			name:   "last non-null usage wins",
			reason: "continuous usage stats send cumulative usage; a null usage after it changes nothing; absent details are -1",
			events: []ev{
				d(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1}}`),
				d(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`),
				d(`{"choices":[],"usage":null}`),
			},
			kinds: []Kind{Other, Other, Other},
			want: view{HasUsage: true,
				Usage: Usage{InputTokens: 9, OutputTokens: 7, ReasoningTokens: -1, CachedTokens: -1}},
		},
		{
			name:   "zeroed placeholder usage",
			reason: "an all-zero usage carries nothing (Ollama's placeholder); without a real one the tokenizer must be used",
			events: []ev{d(`{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`)},
			kinds:  []Kind{Other},
			want:   view{},
		},
		{
			name:   "float and negative counts",
			reason: "a float count is read; a negative or non-numeric one is unknown",
			events: []ev{d(`{"usage":{"prompt_tokens":5.0,"completion_tokens":-3,"completion_tokens_details":{"reasoning_tokens":"2"},"prompt_tokens_details":null}}`)},
			kinds:  []Kind{Other},
			want: view{HasUsage: true,
				Usage: Usage{InputTokens: 5, OutputTokens: -1, ReasoningTokens: -1, CachedTokens: -1}},
		},
		{
			name:   "n=2",
			reason: "an event is Content if any choice has content; choices are distinct indexes; the finish reason is index 0's even when index 1 finishes last",
			events: []ev{
				d(chunk(delta(0, `{"role":"assistant","content":""}`, "null") + "," + delta(1, `{"role":"assistant","content":""}`, "null"))),
				d(chunk(delta(1, `{"content":"B"}`, "null"))),
				d(chunk(delta(0, `{"content":""}`, "null") + "," + delta(1, `{"content":"b"}`, "null"))),
				d(chunk(delta(0, `{"content":"A"}`, `"stop"`))),
				d(chunk(delta(1, `{}`, `"length"`))),
			},
			kinds: []Kind{Other, Content, Content, Content, Other},
			want:  view{Model: "m", Choices: 2, ContentEvents: 3, Text: "BbA", FinishReason: "stop"},
		},
		{
			name:   "finish_reason length",
			reason: "a finish-only chunk with an empty delta is Other and records the reason",
			events: []ev{
				d(chunk(delta(0, `{"content":"x"}`, "null"))),
				d(chunk(delta(0, `{"role":"assistant","content":""}`, `"length"`))),
			},
			kinds: []Kind{Content, Other},
			want:  view{Model: "m", Choices: 1, ContentEvents: 1, Text: "x", FinishReason: "length"},
		},
		{
			name:   "unusual finish reason",
			reason: "a reason outside the interned set is still recorded",
			events: []ev{d(chunk(delta(0, `{}`, `"eos_token"`)))},
			kinds:  []Kind{Other},
			want:   view{Model: "m", Choices: 1, FinishReason: "eos_token"},
		},
		{
			name:   "missing index",
			reason: "a choice without an index is choice 0 (single-choice servers omit it)",
			events: []ev{d(`{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}`)},
			kinds:  []Kind{Content},
			want:   view{Choices: 1, ContentEvents: 1, Text: "x", FinishReason: "stop"},
		},
		{
			name:   "in-stream error, OpenAI shape",
			reason: "an error object inside the stream is Error with its type and message",
			events: []ev{
				d(chunk(delta(0, `{"content":"x"}`, "null"))),
				d(`{"error":{"message":"boom","type":"server_error","code":500}}`),
			},
			kinds: []Kind{Content, Error},
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "x",
				ErrorType: "server_error", ErrorMessage: "boom"},
		},
		{
			name:   "in-stream error, vLLM shape",
			reason: "vLLM sends a bare object with object:error",
			events: []ev{d(`{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}`)},
			kinds:  []Kind{Error},
			want:   view{ErrorType: "BadRequestError", ErrorMessage: "too long"},
		},
		{
			name:   "error as a string",
			reason: `Ollama and some gateways send {"error":"message"}`,
			events: []ev{d(`{"error":"model not found"}`)},
			kinds:  []Kind{Error},
			want:   view{ErrorMessage: "model not found"},
		},
		{
			name:   "error with a numeric code only",
			reason: "the code stands in for a missing type",
			events: []ev{d(`{"error":{"message":"slow down","code":429}}`)},
			kinds:  []Kind{Error},
			want:   view{ErrorType: "429", ErrorMessage: "slow down"},
		},
		{
			name:   "error with a string code only",
			reason: "the code stands in for a missing type",
			events: []ev{d(`{"error":{"message":"m","code":"rate_limit_exceeded"}}`)},
			kinds:  []Kind{Error},
			want:   view{ErrorType: "rate_limit_exceeded", ErrorMessage: "m"},
		},
		{
			name:   "null error is no error",
			reason: `some servers send "error":null on every chunk`,
			events: []ev{d(`{"error":null,"choices":[{"index":0,"delta":{"content":"x"}}]}`)},
			kinds:  []Kind{Content},
			want:   view{Choices: 1, ContentEvents: 1, Text: "x"},
		},
		{
			name:   "SSE event named error with plain text",
			reason: "an event typed error is Error whatever its data; non-JSON data becomes the message",
			events: []ev{{typ: "error", data: "upstream went away"}},
			kinds:  []Kind{Error},
			want:   view{ErrorMessage: "upstream went away"},
		},
		{
			name:   "SSE event named error with JSON",
			reason: "a typed error event with a JSON error object is read like an in-stream error",
			events: []ev{{typ: "error", data: `{"error":{"message":"overloaded","type":"overloaded_error"}}`}},
			kinds:  []Kind{Error},
			want:   view{ErrorType: "overloaded_error", ErrorMessage: "overloaded"},
		},
		{
			name:   "invalid JSON",
			reason: "a cut or garbled event is Malformed and counted, and the decoder keeps working",
			events: []ev{
				d(`{"choices":[{"index":0,"delta":{"content":"x`),
				d(`not json`),
				d(chunk(delta(0, `{"content":"y"}`, "null"))),
			},
			kinds: []Kind{Malformed, Malformed, Content},
			want:  view{Model: "m", Choices: 1, ContentEvents: 1, Text: "y", Malformed: 2},
		},
		{
			name:   "JSON that is not an object",
			reason: "an array, string or number is not an event this API sends",
			events: []ev{d(`[1,2]`), d(`"x"`), d(`42`), d(`null`)},
			kinds:  []Kind{Malformed, Malformed, Malformed, Malformed},
			want:   view{Malformed: 4},
		},
		{
			name:   "[DONE]",
			reason: "the sentinel is Done, with or without surrounding white space",
			events: []ev{d("[DONE]"), d(" [DONE]\r\n")},
			kinds:  []Kind{Done, Done},
			want:   view{},
		},
		{
			name:   "empty data and keep-alives",
			reason: "events without data (comment keep-alives, blank data) are Other",
			events: []ev{d(""), d("  "), {typ: "ping", data: ""}},
			kinds:  []Kind{Other, Other, Other},
			want:   view{},
		},
		{
			name:   "object without choices",
			reason: "a JSON object without choices, usage or error (a lifecycle event) is Other",
			events: []ev{d(`{"id":"x","object":"chat.completion.chunk"}`)},
			kinds:  []Kind{Other},
			want:   view{},
		},
		{
			name:   "content of the wrong type",
			reason: "null, a number or an object as content generates no text",
			events: []ev{d(chunk(delta(0, `{"content":null}`, "null"))), d(chunk(delta(0, `{"content":7}`, "null")))},
			kinds:  []Kind{Other, Other},
			want:   view{Model: "m", Choices: 1},
		},
		{
			name:   "escapes are decoded",
			reason: "the kept text is the decoded string a tokenizer should see",
			events: []ev{d(chunk(delta(0, `{"content":"a\nb\u00e9\ud83d\ude00\"q\""}`, "null")))},
			kinds:  []Kind{Content},
			want:   view{Model: "m", Choices: 1, ContentEvents: 1, Text: "a\nbé😀\"q\""},
		},
		{
			name:   "model changes",
			reason: "the last model named wins (a router may rewrite it)",
			events: []ev{d(`{"model":"a","choices":[]}`), d(`{"model":"b","choices":[]}`), d(`{"model":"","choices":[]}`)},
			kinds:  []Kind{Other, Other, Other},
			want:   view{Model: "b"},
		},
		{
			name:   "completions shape on the chat decoder",
			reason: "the chat decoder also reads choices[].text, so a mis-routed API is still measured",
			events: []ev{d(`{"choices":[{"index":0,"text":"hi"}]}`)},
			kinds:  []Kind{Content},
			want:   view{Choices: 1, ContentEvents: 1, Text: "hi"},
		},
	})
}

func TestOpenAICompletionsEvents(t *testing.T) {
	t.Parallel()
	cmpl := func(text, finish, usage string) string {
		return fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":%q,"index":0,"finish_reason":%s}],"model":"m","usage":%s}`, text, finish, usage)
	}
	const zero = `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	runEventRows(t, []eventRow{
		{
			name:   "text chunks",
			api:    APIOpenAICompletions,
			reason: "choices[].text non-empty is Content",
			events: []ev{d(cmpl("Once", "null", "null")), d(cmpl(" upon", "null", "null"))},
			kinds:  []Kind{Content, Content},
			want:   view{Model: "m", Choices: 1, ContentEvents: 2, Text: "Once upon"},
		},
		{
			name:   "empty text with finish length",
			api:    APIOpenAICompletions,
			reason: "the final empty-text chunk is Other and records finish_reason",
			events: []ev{d(cmpl("", `"length"`, "null"))},
			kinds:  []Kind{Other},
			want:   view{Model: "m", Choices: 1, FinishReason: "length"},
		},
		{
			name:   "zeroed usage on every chunk, real one last",
			api:    APIOpenAICompletions,
			reason: "Ollama's /v1/completions sends a zeroed usage with every chunk; the real one, last, wins",
			events: []ev{
				d(cmpl("a", "null", zero)),
				d(cmpl("", `"length"`, zero)),
				d(`{"id":"cmpl-1","object":"text_completion","choices":[],"model":"m","usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`),
				d("[DONE]"),
			},
			kinds: []Kind{Content, Other, Other, Done},
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "a", FinishReason: "length", HasUsage: true,
				Usage: Usage{InputTokens: 5, OutputTokens: 1, ReasoningTokens: -1, CachedTokens: -1}},
		},
		{
			name:   "n=2",
			api:    APIOpenAICompletions,
			reason: "two choice indexes are two choices; an event with one text is Content",
			events: []ev{
				d(`{"choices":[{"text":"a","index":0},{"text":"","index":1}]}`),
				d(`{"choices":[{"text":"b","index":1,"finish_reason":"stop"}]}`),
			},
			kinds: []Kind{Content, Content},
			want:  view{Choices: 2, ContentEvents: 2, Text: "ab"},
		},
		{
			name:   "in-stream error",
			api:    APIOpenAICompletions,
			reason: "errors are read the same way on both APIs",
			events: []ev{d(`{"error":{"message":"boom","type":"server_error"}}`)},
			kinds:  []Kind{Error},
			want:   view{ErrorType: "server_error", ErrorMessage: "boom"},
		},
	})
}

func TestOpenAIBody(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, reason string
		api          string
		body         string
		kind         Kind
		want         view
	}{
		{
			name:   "chat completion",
			reason: "message.content, usage, model and finish_reason of a non-streaming body; one content event",
			body:   `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			kind:   Content,
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "Hi there", FinishReason: "stop", HasUsage: true,
				Usage: Usage{InputTokens: 3, OutputTokens: 2, ReasoningTokens: -1, CachedTokens: -1}},
		},
		{
			name:   "reasoning and content",
			reason: "both texts are kept; the body is Content",
			body:   `{"choices":[{"index":0,"message":{"content":"4","reasoning_content":"2+2"}}]}`,
			kind:   Content,
			want:   view{Choices: 1, ContentEvents: 1, Text: "4", ReasoningText: "2+2"},
		},
		{
			name:   "reasoning only",
			reason: "a body whose only text is reasoning is Reasoning",
			body:   `{"choices":[{"index":0,"message":{"content":null,"reasoning":"hmm"},"finish_reason":"length"}]}`,
			kind:   Reasoning,
			want:   view{Choices: 1, ReasoningEvents: 1, ReasoningText: "hmm", FinishReason: "length"},
		},
		{
			name:   "tool calls",
			reason: "a tool-call-only body is Content and flags ToolCalls",
			body:   `{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"d","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			kind:   Content,
			want:   view{Choices: 1, ContentEvents: 1, ToolCalls: true, Text: `f{"a":1}g{}`, FinishReason: "tool_calls"},
		},
		{
			name:   "refusal",
			reason: "message.refusal is content and flagged",
			body:   `{"choices":[{"index":0,"message":{"content":null,"refusal":"no"}}]}`,
			kind:   Content,
			want:   view{Choices: 1, ContentEvents: 1, Refusal: true, Text: "no"},
		},
		{
			name:   "content parts",
			reason: "a message.content array of text parts is read",
			body:   `{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]}}]}`,
			kind:   Content,
			want:   view{Choices: 1, ContentEvents: 1, Text: "ab"},
		},
		{
			name:   "n=2",
			reason: "both choices are counted and their texts kept in order",
			body:   `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},{"index":1,"message":{"content":"b"},"finish_reason":"length"}]}`,
			kind:   Content,
			want:   view{Choices: 2, ContentEvents: 1, Text: "ab", FinishReason: "stop"},
		},
		{
			name:   "empty completion",
			reason: "a body whose message is empty carries no content",
			body:   `{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"length"}]}`,
			kind:   Other,
			want:   view{Choices: 1, FinishReason: "length"},
		},
		{
			name:   "completions body",
			api:    APIOpenAICompletions,
			reason: "choices[].text of a text_completion body",
			body:   `{"object":"text_completion","model":"m","choices":[{"text":"Once upon","index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`,
			kind:   Content,
			want: view{Model: "m", Choices: 1, ContentEvents: 1, Text: "Once upon", FinishReason: "length", HasUsage: true,
				Usage: Usage{InputTokens: 4, OutputTokens: 2, ReasoningTokens: -1, CachedTokens: -1}},
		},
		{
			name:   "error body",
			reason: "an error response body is Error with type and message",
			body:   `{"error":{"message":"model not found","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			kind:   Error,
			want:   view{ErrorType: "invalid_request_error", ErrorMessage: "model not found"},
		},
		{
			name:   "vLLM error body",
			reason: "vLLM's bare error object",
			body:   `{"object":"error","message":"bad","type":"BadRequestError","code":400}`,
			kind:   Error,
			want:   view{ErrorType: "BadRequestError", ErrorMessage: "bad"},
		},
		{
			name:   "invalid body",
			reason: "a body that is not JSON is Malformed and counted",
			body:   `<html>502 Bad Gateway</html>`,
			kind:   Malformed,
			want:   view{Malformed: 1},
		},
		{
			name:   "empty body",
			reason: "an empty body carries nothing",
			body:   "",
			kind:   Other,
			want:   view{},
		},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dec := NewOpenAIChat()
			if r.api == APIOpenAICompletions {
				dec = NewOpenAICompletions()
			}
			if k := dec.Body([]byte(r.body)); k != r.kind {
				t.Errorf("%s\nkind = %v, want %v", r.reason, k, r.kind)
			}
			want := r.want
			if want.Usage == (Usage{}) {
				want.Usage = NoUsage
			}
			if got := viewOf(dec.Result()); got != want {
				t.Errorf("%s\nresult = %+v\nwant     %+v", r.reason, got, want)
			}
		})
	}
}

func TestOpenAITextCap(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, reason string
		max          int
		events       []string
		text, rtext  string
		truncated    bool
	}{
		{"under the cap", "text that fits is kept whole and not flagged", 10,
			[]string{`{"content":"abc"}`, `{"content":"def"}`}, "abcdef", "", false},
		{"exactly the cap", "reaching the cap without dropping anything is not truncation", 6,
			[]string{`{"content":"abc"}`, `{"content":"def"}`}, "abcdef", "", false},
		{"over the cap", "text past the cap is dropped and flagged; events still count", 5,
			[]string{`{"content":"abc"}`, `{"content":"def"}`, `{"content":"g"}`}, "abcde", "", true},
		{"rune boundary", "a character the cap would split is dropped whole", 5,
			[]string{`{"content":"abcdé"}`}, "abcd", "", true},
		{"reasoning cap", "reasoning text has its own buffer under the same cap and sets the same flag", 3,
			[]string{`{"reasoning_content":"abcd"}`, `{"content":"xy"}`}, "xy", "abc", true},
		{"no text kept", "a cap of zero keeps nothing and says so", 0,
			[]string{`{"content":"a"}`}, "", "", true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dec := NewOpenAIChat()
			dec.(TextLimiter).SetMaxText(r.max)
			for _, e := range r.events {
				if k := dec.Event(nil, []byte(chunk(delta(0, e, "null")))); k != Content && k != Reasoning {
					t.Fatalf("%s: event %s = %v", r.reason, e, k)
				}
			}
			res := dec.Result()
			if string(res.Text) != r.text || string(res.ReasoningText) != r.rtext || res.TextTruncated != r.truncated {
				t.Errorf("%s\ngot text %q reasoning %q truncated %v, want %q %q %v",
					r.reason, res.Text, res.ReasoningText, res.TextTruncated, r.text, r.rtext, r.truncated)
			}
			if res.ContentEvents+res.ReasoningEvents != len(r.events) {
				t.Errorf("%s: %d content + %d reasoning events, want %d", r.reason,
					res.ContentEvents, res.ReasoningEvents, len(r.events))
			}
		})
	}
}

func TestOpenAIErrorMessageCapped(t *testing.T) {
	t.Parallel()
	long := make([]byte, 3*maxErrorMessage)
	for i := range long {
		long[i] = 'x'
	}
	dec := NewOpenAIChat()
	dec.Event(nil, []byte(`{"error":{"message":"`+string(long)+`"}}`))
	if n := len(dec.Result().ErrorMessage); n != maxErrorMessage {
		t.Errorf("error message kept %d bytes, want the cap %d: a server must not grow records without bound", n, maxErrorMessage)
	}
}

func TestOpenAIReset(t *testing.T) {
	t.Parallel()
	dec := NewOpenAIChat()
	dec.Event(nil, []byte(chunk(delta(0, `{"content":"hello","reasoning_content":"r"}`, `"stop"`)+`,`+delta(70, `{"content":"x"}`, "null"))))
	dec.Event(nil, []byte(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	dec.Event(nil, []byte(`{"error":"e"}`))
	dec.Event(nil, []byte(`{`))
	text := dec.Result().Text
	dec.Reset()
	if got := viewOf(dec.Result()); got != fresh() {
		t.Errorf("after Reset result = %+v, want a fresh one", got)
	}
	if cap(dec.Result().Text) != cap(text) || cap(dec.Result().Text) == 0 {
		t.Errorf("Reset dropped the text buffer (cap %d, was %d); it must be reused", cap(dec.Result().Text), cap(text))
	}
	dec.Event(nil, []byte(chunk(delta(5, `{"content":"z"}`, "null"))))
	if got := dec.Result(); got.Choices != 1 || string(got.Text) != "z" || got.FinishReason != "" {
		t.Errorf("after Reset, a new response must start from nothing: %+v", viewOf(got))
	}
}

func TestOpenAIEventDoesNotRetainData(t *testing.T) {
	t.Parallel()
	dec := NewOpenAIChat()
	data := []byte(chunk(delta(0, `{"content":"abc"}`, "null")))
	dec.Event(nil, data)
	for i := range data {
		data[i] = 'X'
	}
	if r := dec.Result(); string(r.Text) != "abc" || r.Model != "m" {
		t.Errorf("result changed when the caller reused its buffer: text %q model %q", r.Text, r.Model)
	}
}
