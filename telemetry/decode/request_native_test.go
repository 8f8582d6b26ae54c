package decode

import (
	"encoding/json"
	"testing"
)

func TestParseRequestFor(t *testing.T) {
	t.Parallel()
	type want struct {
		stream    bool
		maxTokens int64
		prompt    string
	}
	rows := []struct {
		api, name, reason, body string
		want                    want
	}{
		{APIOllamaChat, "ollama default stream", "Ollama streams unless the body says false; num_predict is the limit",
			`{"model":"m","options":{"num_predict":32},"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			want{true, 32, "Be brief.\nHi"}},
		{APIOllamaChat, "ollama null stream", "a null stream is absent, so true",
			`{"stream":null,"messages":[]}`, want{true, -1, ""}},
		{APIOllamaGenerate, "ollama stream false", "stream:false is honoured; system comes before the prompt",
			`{"stream":false,"system":"S","prompt":"P","options":{"num_predict":-1}}`, want{false, -1, "S\nP"}},
		{APIOpenAIChat, "openai keeps its default", "the OpenAI rules do not default stream to true",
			`{"messages":[{"content":"Hi"}],"options":{"num_predict":5}}`, want{false, -1, "Hi"}},
		{"", "empty api is openai", "ParseRequest's rules",
			`{"max_tokens":7,"prompt":"x","system":"ignored"}`, want{false, 7, "x"}},
		{APIAnthropicMessages, "anthropic", "system blocks then messages with text and tool_result blocks; max_tokens",
			`{"model":"claude-x","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"You are terse."}],"messages":[` +
				`{"role":"user","content":"Weather?"},` +
				`{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"t","name":"w","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"Sunny"}]},{"type":"image","source":{}}]}]}`,
			want{true, 1024, "You are terse.\nWeather?\nChecking.\nSunny"}},
		{APIAnthropicMessages, "anthropic string system", "system may be a plain string",
			`{"max_tokens":1,"system":"Sys","messages":[{"role":"user","content":"Hi"}]}`, want{false, 1, "Sys\nHi"}},
		{APIOpenAIResponses, "responses", "instructions, then input items; max_output_tokens",
			`{"model":"gpt-x","stream":true,"max_output_tokens":50,"instructions":"Be kind.","input":[` +
				`{"role":"user","content":[{"type":"input_text","text":"Hello"}]},{"type":"function_call_output","call_id":"c","output":"42"}]}`,
			want{true, 50, "Be kind.\nHello\n42"}},
		{APIOpenAIResponses, "responses string input", "input may be a plain string",
			`{"input":"Tell me a joke"}`, want{false, -1, "Tell me a joke"}},
		{APITGIGenerate, "tgi", "inputs and parameters.max_new_tokens",
			`{"inputs":"What is Deep Learning?","parameters":{"max_new_tokens":20,"details":true}}`, want{false, 20, "What is Deep Learning?"}},
		{APIEmbeddings, "embeddings", "input strings are the prompt; token-id inputs have no text",
			`{"model":"e","input":["a","b",[1,2]]}`, want{false, -1, "a\nb"}},
		{APIEmbeddings, "ollama embeddings", "the older Ollama route names it prompt",
			`{"model":"e","prompt":"hello"}`, want{false, -1, "hello"}},
		{APIRerank, "rerank", "query then documents, strings or objects",
			`{"query":"q","documents":["d1",{"text":"d2"}]}`, want{false, -1, "q\nd1\nd2"}},
		{APIRerank, "tei rerank", "TEI names the documents texts",
			`{"query":"q","texts":["t"]}`, want{false, -1, "q\nt"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := ParseRequestFor(r.api, []byte(r.body), 1<<10)
			if !got.Valid || got.Stream != r.want.stream || got.MaxTokens != r.want.maxTokens ||
				string(got.Prompt) != r.want.prompt || got.PromptTruncated || got.N != 1 {
				t.Errorf("%s\nParseRequestFor(%q) = %+v (prompt %q)\nwant stream %v max %d prompt %q",
					r.reason, r.api, got, got.Prompt, r.want.stream, r.want.maxTokens, r.want.prompt)
			}
		})
	}
}

// TestParseRequestForNativeFixture reads the real /api/chat request of the capture with the
// Ollama rules, against the same facts read with encoding/json.
func TestParseRequestForNativeFixture(t *testing.T) {
	t.Parallel()
	body := readTestdata(t, "native-api-chat.request.json")
	var want struct {
		Model   string `json:"model"`
		Stream  *bool  `json:"stream"`
		Options struct {
			NumPredict int64 `json:"num_predict"`
		} `json:"options"`
		Messages []struct{ Content string }
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	got := ParseRequestFor(APIOllamaChat, body, 1<<10)
	if got.Model != want.Model || got.MaxTokens != want.Options.NumPredict || got.MaxTokens != 32 ||
		got.Stream != (want.Stream == nil || *want.Stream) || string(got.Prompt) != want.Messages[0].Content {
		t.Errorf("ParseRequestFor = %+v (prompt %q), want model %q num_predict %d prompt %q",
			got, got.Prompt, want.Model, want.Options.NumPredict, want.Messages[0].Content)
	}
}

func TestParseRequestForCutBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"m","options":{"num_predict":8},"prompt":"Once upon a ti`)
	got := ParseRequestFor(APIOllamaGenerate, body, 1<<10)
	if got.Valid || !got.PromptTruncated || got.MaxTokens != 8 || !got.Stream || string(got.Prompt) != "Once upon a ti" {
		t.Errorf("a cut Ollama body must keep what arrived whole, the started prompt and the stream default: %+v (prompt %q)", got, got.Prompt)
	}
}
