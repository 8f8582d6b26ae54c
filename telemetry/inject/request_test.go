package inject

import (
	"testing"

	"github.com/valyala/fastjson"
)

func TestAddIncludeUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string // the body returned
		res  Result
	}{
		{"a stream without stream_options gets the member first, the rest byte for byte",
			`{"model":"m","stream":true,"max_tokens":1e2,"messages":[{"role":"user","content":"caf\u00e9"}]}`,
			`{"stream_options":{"include_usage":true},"model":"m","stream":true,"max_tokens":1e2,"messages":[{"role":"user","content":"caf\u00e9"}]}`,
			Injected},
		{"leading whitespace and spacing inside are kept",
			" \n{ \"stream\" : true }",
			" \n{\"stream_options\":{\"include_usage\":true}, \"stream\" : true }",
			Injected},
		{"a null stream_options becomes an object",
			`{"stream":true,"stream_options":null}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`,
			Injected},
		{"an empty stream_options gets the member without a comma",
			`{"stream":true,"stream_options":{ }}`,
			`{"stream":true,"stream_options":{"include_usage":true }}`,
			Injected},
		{"other stream_options keys are kept",
			`{"stream":true,"stream_options":{"continuous_usage_stats":false}}`,
			`{"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":false}}`,
			Injected},
		{"include_usage false is turned true in place",
			`{"stream_options":{"include_usage":false,"x":1},"stream":true}`,
			`{"stream_options":{"include_usage":true,"x":1},"stream":true}`,
			Injected},
		{"include_usage null is turned true in place",
			`{"stream_options":{"include_usage":null},"stream":true}`,
			`{"stream_options":{"include_usage":true},"stream":true}`,
			Injected},
		{"an escaped key is the same key to the server",
			`{"stream":true,"stream\u005foptions":{"x":1}}`,
			`{"stream":true,"stream\u005foptions":{"include_usage":true,"x":1}}`,
			Injected},
		{"a nested stream_options inside a message is not the request's",
			`{"messages":[{"stream_options":{"include_usage":true}}],"stream":true}`,
			`{"stream_options":{"include_usage":true},"messages":[{"stream_options":{"include_usage":true}}],"stream":true}`,
			Injected},
		{"a request that asks for usage is left alone",
			`{"stream":true,"stream_options":{"include_usage":true}}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`,
			AlreadyAsked},
		{"stream false does not stream",
			`{"stream":false}`, `{"stream":false}`, NotStreaming},
		{"no stream key does not stream",
			`{"model":"m"}`, `{"model":"m"}`, NotStreaming},
		{"a truthy but non-boolean stream is not true to an OpenAI server",
			`{"stream":1}`, `{"stream":1}`, NotStreaming},
		{"a duplicate stream key is ambiguous",
			`{"stream":false,"stream":true}`, `{"stream":false,"stream":true}`, Declined},
		{"a duplicate stream_options key is ambiguous",
			`{"stream":true,"stream_options":{},"stream_options":{}}`, `{"stream":true,"stream_options":{},"stream_options":{}}`, Declined},
		{"a duplicate include_usage key is ambiguous",
			`{"stream":true,"stream_options":{"include_usage":false,"include_usage":true}}`,
			`{"stream":true,"stream_options":{"include_usage":false,"include_usage":true}}`, Declined},
		{"a stream_options that is not an object is the server's to refuse",
			`{"stream":true,"stream_options":"yes"}`, `{"stream":true,"stream_options":"yes"}`, Declined},
		{"invalid JSON is passed as it is",
			`{"stream":true,`, `{"stream":true,`, Declined},
		{"a JSON array is not a request",
			`[{"stream":true}]`, `[{"stream":true}]`, Declined},
		{"an empty body is not a request",
			``, ``, Declined},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			got, res := AddIncludeUsage(in)
			if res != tt.res {
				t.Errorf("result %v, want %v", res, tt.res)
			}
			if string(got) != tt.want {
				t.Errorf("body\n  %s\nwant\n  %s", got, tt.want)
			}
			if string(in) != tt.in {
				t.Errorf("the input was modified: %s", in)
			}
			if res == Injected {
				checkInjected(t, in, got)
			}
		})
	}
}

// checkInjected checks the properties of an injected body that hold for any input: valid JSON
// that asks for usage and still streams.
func checkInjected(t *testing.T, in, got []byte) {
	t.Helper()
	v, err := fastjson.ParseBytes(got)
	if err != nil {
		t.Fatalf("the injected body is not JSON: %v\n%s\nfrom\n%s", err, got, in)
	}
	if !v.GetBool("stream_options", "include_usage") || !v.GetBool("stream") {
		t.Fatalf("the injected body does not stream with include_usage: %s", got)
	}
}

func TestIsUsageOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"the chunk include_usage adds (vLLM, OpenAI)",
			`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, true},
		{"Ollama's, with its model and fingerprint after the choices",
			`{"id":"cmpl-97","object":"text_completion","created":1,"choices":[],"model":"m","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":5,"completion_tokens":64,"total_tokens":69}}`, true},
		{"whitespace inside the empty array",
			`{"choices":[ ],"usage":{}}`, true},
		{"Ollama's /v1/completions puts a zeroed usage on every content chunk: not usage-only",
			`{"choices":[{"text":",","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, false},
		{"continuous usage stats ride on content chunks",
			`{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"completion_tokens":1}}`, false},
		{"usage null with empty choices (OpenAI's placeholder) carries no count",
			`{"choices":[],"usage":null}`, false},
		{"a usage without a choices field is some other API's event",
			`{"usage":{"output_tokens":3}}`, false},
		{"choices that are not an array",
			`{"choices":{},"usage":{}}`, false},
		{"the end marker", `[DONE]`, false},
		{"malformed JSON mentioning both words", `{"choices":[],"usage":{`, false},
	}
	var p fastjson.Parser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsUsageOnly(&p, []byte(tt.data)); got != tt.want {
				t.Errorf("IsUsageOnly = %v, want %v", got, tt.want)
			}
		})
	}
}
