package decode

import "testing"

func TestTGIEvents(t *testing.T) {
	t.Parallel()
	tok := func(text string, special bool, tail string) ev {
		sp := "false"
		if special {
			sp = "true"
		}
		return d(`{"index":1,"token":{"id":5,"text":"` + text + `","logprob":-0.1,"special":` + sp + `}` + tail + `}`)
	}
	const details = `"details":{"finish_reason":"%s","generated_tokens":3,"seed":null,"input_length":5}`
	runFormatRows(t, NewTGI, []formatRow{
		{
			name:   "tokens",
			reason: "every non-special token with text is content; generated_text and details are null until the end",
			events: []ev{tok(" The", false, `,"generated_text":null,"details":null`), tok(" sky", false, `,"generated_text":null`)},
			kinds:  []Kind{Content, Content},
			want:   xview{view: view{Choices: 1, ContentEvents: 2, Text: " The sky"}},
		},
		{
			name:   "empty and special tokens",
			reason: "an empty token text and a special token generate no text",
			events: []ev{tok("", false, ""), tok("<|im_start|>", true, "")},
			kinds:  []Kind{Other, Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "eos ends the stream",
			reason: "the final event's token is the special end-of-sequence token: Done, with details as usage",
			events: []ev{tok("</s>", true, `,"generated_text":"The sky",`+sprintf(details, "eos_token"))},
			kinds:  []Kind{Done},
			want: xview{view: view{HasUsage: true, FinishReason: "eos_token", Choices: 1,
				Usage: Usage{InputTokens: 5, OutputTokens: 3, ReasoningTokens: -1, CachedTokens: -1}}, Ended: true},
		},
		{
			name:   "length ends on a token",
			reason: "a stream stopped by max_new_tokens ends on an ordinary token: Content (its time counts) and Ended",
			events: []ev{tok(" blue", false, `,"generated_text":"The sky is blue",`+sprintf(details, "length"))},
			kinds:  []Kind{Content},
			want: xview{view: view{HasUsage: true, FinishReason: "length", Choices: 1, ContentEvents: 1, Text: " blue",
				Usage: Usage{InputTokens: 5, OutputTokens: 3, ReasoningTokens: -1, CachedTokens: -1}}, Ended: true},
		},
		{
			name:   "final without details",
			reason: "details are only sent when the request asks for them; generated_text still marks the end",
			events: []ev{tok("</s>", true, `,"generated_text":"The sky"`)},
			kinds:  []Kind{Done},
			want:   xview{view: view{Choices: 1}, Ended: true},
		},
		{
			name:   "error event",
			reason: "TGI's error shape: a string error and a sibling error_type",
			events: []ev{d(`{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}`)},
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "generation", ErrorMessage: "Request failed during generation: Server error: CUDA out of memory"}},
		},
		{
			name:   "keep-alive and malformed",
			reason: "an empty event (a comment) is nothing; non-JSON data is malformed",
			events: []ev{d(``), d(`data:{"index"`)},
			kinds:  []Kind{Other, Malformed},
			want:   xview{view: view{Malformed: 1}},
		},
	})
}

func TestTGIBody(t *testing.T) {
	t.Parallel()
	runFormatRows(t, NewTGI, []formatRow{
		{
			name:   "generate",
			reason: "a /generate body: the whole text and details",
			body:   `{"generated_text":"Hello there","details":{"finish_reason":"length","generated_tokens":2,"seed":null,"prefill":[],"tokens":[]}}`,
			kinds:  []Kind{Content},
			want: xview{view: view{HasUsage: true, FinishReason: "length", Choices: 1, ContentEvents: 1, Text: "Hello there",
				Usage: Usage{InputTokens: -1, OutputTokens: 2, ReasoningTokens: -1, CachedTokens: -1}}},
		},
		{
			name:   "inference api array",
			reason: "the Hugging Face Inference API wraps the answer in an array",
			body:   `[{"generated_text":"Hi"}]`,
			kinds:  []Kind{Content},
			want:   xview{view: view{Choices: 1, ContentEvents: 1, Text: "Hi"}},
		},
		{
			name:   "empty array",
			reason: "an empty array has nothing in it, but is valid JSON",
			body:   `[]`,
			kinds:  []Kind{Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "validation error",
			reason: "an HTTP 422 body",
			body:   `{"error":"Input validation error: inputs must have less than 4096 tokens","error_type":"validation"}`,
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "validation", ErrorMessage: "Input validation error: inputs must have less than 4096 tokens"}},
		},
		{
			name:   "scalar",
			reason: "a JSON scalar is not a response",
			body:   `"hi"`,
			kinds:  []Kind{Malformed},
			want:   xview{view: view{Malformed: 1}},
		},
	})
}
