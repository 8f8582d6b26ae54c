package decode

import (
	"testing"
)

func TestForPath(t *testing.T) {
	t.Parallel()
	const sse, ndjson, jsonCT = "text/event-stream", "application/x-ndjson", "application/json"
	rows := []struct {
		path, ctype, reason, api string
	}{
		{"/v1/chat/completions", sse, "the OpenAI chat path", APIOpenAIChat},
		{"/v1/completions", sse, "the legacy completions path must not be taken for chat", APIOpenAICompletions},
		{"/chat/completions", sse, "no version prefix (some gateways strip it)", APIOpenAIChat},
		{"/openai/deployments/gpt/chat/completions", sse, "Azure-style prefixes do not matter", APIOpenAIChat},
		{"/v1/chat/completions/", sse, "a trailing slash is ignored", APIOpenAIChat},
		{"/v1/completions?api-version=1", sse, "a query string is ignored", APIOpenAICompletions},
		{"/v1/chat/completionsX", sse, "a path that only starts like an API is unknown", APIUnknown},
		{"/v1/text_completions", sse, "the suffix must start at a path segment", APIUnknown},
		{"/v1/responses", sse, "the Responses API", APIOpenAIResponses},
		{"/v1/responses/resp_1", jsonCT, "retrieving a stored response is not a generation", APIUnknown},
		{"/v1/messages", sse, "Anthropic Messages", APIAnthropicMessages},
		{"/anthropic/v1/messages", sse, "a gateway prefix before Anthropic's path", APIAnthropicMessages},
		{"/v1/messages/count_tokens", jsonCT, "token counting is not a generation", APIUnknown},
		{"/generate_stream", sse, "TGI's streaming route", APITGIGenerate},
		{"/generate", jsonCT, "TGI's non-streaming route shares the decoder", APITGIGenerate},
		{"/api/chat", ndjson, "Ollama native chat streams NDJSON", APIOllamaChat},
		{"/api/chat", "application/x-ndjson; charset=utf-8", "Content-Type parameters do not matter", APIOllamaChat},
		{"/api/chat", jsonCT, "a stream:false body is still Ollama's", APIOllamaChat},
		{"/api/chat", sse, "SSE on an NDJSON route is some other server: timed only", APIUnknown},
		{"/api/generate", ndjson, "/api/generate must not be taken for TGI's /generate", APIOllamaGenerate},
		{"/v1/chat/completions", ndjson, "NDJSON on an SSE route is timed only", APIUnknown},
		{"/v1/chat/completions", "TEXT/EVENT-STREAM", "media types are case-insensitive", APIOpenAIChat},
		{"/v1/chat/completions", "", "an unknown Content-Type keeps the path's choice", APIOpenAIChat},
		{"/v1/embeddings", jsonCT, "OpenAI embeddings", APIEmbeddings},
		{"/api/embed", jsonCT, "Ollama embeddings", APIEmbeddings},
		{"/api/embeddings", jsonCT, "Ollama's older embeddings route", APIEmbeddings},
		{"/v1/embeddings", sse, "embeddings do not stream: a stream there is timed only", APIUnknown},
		{"/v1/rerank", jsonCT, "rerank", APIRerank},
		{"/rerank", jsonCT, "TEI's rerank route", APIRerank},
		{"/api/tags", jsonCT, "an Ollama route that generates nothing", APIUnknown},
		{"", sse, "an empty path is unknown", APIUnknown},
	}
	for _, r := range rows {
		t.Run(r.path+" "+r.ctype, func(t *testing.T) {
			api, dec := ForPath(r.path, r.ctype)
			defer Put(dec)
			if api != r.api || APIForResponse(r.path, r.ctype) != r.api {
				t.Errorf("%s: ForPath(%q, %q) = %q, want %q", r.reason, r.path, r.ctype, api, r.api)
			}
			if p, ok := dec.(pooled); !ok || p.apiName() != r.api {
				t.Errorf("%s: the decoder for %q is not the %q decoder", r.reason, r.path, r.api)
			}
			if got := viewOf(dec.Result()); got != fresh() {
				t.Errorf("%s: a decoder from ForPath must be reset, got %+v", r.reason, got)
			}
		})
	}
}

func TestGetPut(t *testing.T) {
	t.Parallel()
	for _, api := range []string{APIOpenAIChat, APIOpenAICompletions, APIUnknown, "no-such-api"} {
		for range 3 { // whether or not the pool hands the same decoder back, it must be reset
			dec := Get(api)
			if got := viewOf(dec.Result()); got != fresh() {
				t.Fatalf("Get(%q) returned a used decoder: %+v", api, got)
			}
			dec.Event(nil, []byte(`{"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}`))
			if dec.Result().ContentEvents != 1 {
				t.Fatalf("Get(%q): the decoder did not count a non-empty event as content", api)
			}
			Put(dec)
		}
	}
	Put(nil)                                 // must not panic
	Put(foreign{})                           // a decoder from elsewhere is ignored
	Put(&openAI{base: base{api: "renamed"}}) // a decoder of an unregistered API is dropped, not pooled as unknown
}

func TestPutShrinks(t *testing.T) {
	t.Parallel()
	dec := newOpenAI(APIOpenAIChat)
	dec.SetMaxText(2 * maxPooledBuffer)
	big := make([]byte, maxPooledBuffer+1)
	for i := range big {
		big[i] = 'a'
	}
	dec.Event(nil, []byte(`{"choices":[{"delta":{"content":"`+string(big)+`","reasoning":"r"}}]}`))
	dec.Reset()
	dec.shrink(maxPooledBuffer)
	if cap(dec.res.Text) != 0 {
		t.Errorf("a %d-byte text buffer survived shrink; pooled decoders must not pin large buffers", cap(dec.res.Text))
	}
	if cap(dec.res.ReasoningText) == 0 {
		t.Errorf("a small reasoning buffer was dropped; it should be kept for reuse")
	}
	if dec.maxText != MaxText {
		t.Errorf("shrink left the text cap at %d, want the default %d", dec.maxText, MaxText)
	}
}

// foreign is a ResponseDecoder from outside the package.
type foreign struct{}

func (foreign) Event(typ, data []byte) Kind { return Other }
func (foreign) Body(body []byte) Kind       { return Other }
func (foreign) Result() *Result             { return &Result{} }
func (foreign) Reset()                      {}

func TestUnknown(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, reason string
		data         string
		kind         Kind
	}{
		{"json", "any non-empty event is timed as content", `{"anything":1}`, Content},
		{"text", "even non-JSON", `hello`, Content},
		{"done", "the OpenAI sentinel still ends the stream", `[DONE]`, Done},
		{"empty", "an empty event is not content", ``, Other},
		{"blank", "white space is empty", " \r\n", Other},
	}
	dec := NewUnknown()
	want := 0
	for _, r := range rows {
		if k := dec.Event(nil, []byte(r.data)); k != r.kind {
			t.Errorf("%s: %s: Event(%q) = %v, want %v", r.name, r.reason, r.data, k, r.kind)
		}
		if r.kind == Content {
			want++
		}
	}
	if dec.Body([]byte("{}")) != Content || dec.Body(nil) != Other {
		t.Errorf("a non-empty body is content and an empty one is not")
	}
	want++
	if got := dec.Result(); got.ContentEvents != want || got.Usage != NoUsage || got.HasUsage {
		t.Errorf("unknown result = %+v, want %d content events and no usage", viewOf(got), want)
	}
	dec.Reset()
	if got := viewOf(dec.Result()); got != fresh() {
		t.Errorf("after Reset = %+v", got)
	}
}
