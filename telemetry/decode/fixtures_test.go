package decode

import (
	"encoding/json"
	"strings"
	"testing"
)

// The fixture tests decode real streams captured from Ollama v0.6.5 (see
// telemetry/framing/testdata/README.md) and check the decoder against facts read from the same files
// independently, with encoding/json: the request's max_tokens (one token per event, so that
// many content events), the usage chunk, the finish reason and the concatenated text.

type fixtureChunk struct {
	Model   string           `json:"model"`
	Usage   *json.RawMessage `json:"usage"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

type fixtureUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type fixtureRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	MaxTokens     *int64 `json:"max_tokens"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	Prompt string `json:"prompt"`
}

func TestOllamaFixtures(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, path, reason string
		maxTokens          int // also checked against the request file
		hasUsage           bool
	}{
		{"chat", "/v1/chat/completions", "stream with include_usage: 128 one-token events, a finish chunk, a usage chunk with choices:[] and [DONE] in the same read", 128, true},
		{"completions", "/v1/completions", "legacy completions: every chunk carries a zeroed usage, the real one comes last", 64, true},
		{"chat_sampled", "/v1/chat/completions", "stream without usage: the tokenizer fallback needs the text", 64, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var req fixtureRequest
			if err := json.Unmarshal(readTestdata(t, r.name+".request.json"), &req); err != nil {
				t.Fatal(err)
			}
			if req.MaxTokens == nil || *req.MaxTokens != int64(r.maxTokens) {
				t.Fatalf("fixture request max_tokens = %v, the test expects %d", req.MaxTokens, r.maxTokens)
			}
			events := splitSSE(string(readTestdata(t, r.name+".txt")))

			// The facts, read with encoding/json.
			var wantText strings.Builder
			var wantFinish, wantModel string
			wantUsage := NoUsage
			for _, e := range events {
				if e.data == "[DONE]" {
					continue
				}
				var c fixtureChunk
				if err := json.Unmarshal([]byte(e.data), &c); err != nil {
					t.Fatalf("fixture event %q: %v", e.data, err)
				}
				wantModel = c.Model
				for _, ch := range c.Choices {
					wantText.WriteString(ch.Delta.Content + ch.Text)
					if ch.FinishReason != nil && ch.Index == 0 {
						wantFinish = *ch.FinishReason
					}
				}
				if c.Usage != nil && string(*c.Usage) != "null" {
					var u fixtureUsage
					if err := json.Unmarshal(*c.Usage, &u); err != nil {
						t.Fatal(err)
					}
					wantUsage = Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, ReasoningTokens: -1, CachedTokens: -1}
				}
			}

			api, dec := ForPath(r.path, "text/event-stream")
			defer Put(dec)
			counts := map[Kind]int{}
			for _, e := range events {
				counts[dec.Event([]byte(e.typ), []byte(e.data))]++
			}
			res := dec.Result()
			if counts[Content] != r.maxTokens || res.ContentEvents != r.maxTokens {
				t.Errorf("%s (%s): %d content events (result says %d), want max_tokens = %d",
					r.reason, api, counts[Content], res.ContentEvents, r.maxTokens)
			}
			if counts[Done] != 1 || counts[Malformed] != 0 || counts[Error] != 0 || counts[Reasoning] != 0 {
				t.Errorf("%s: kinds %v, want one Done and no Malformed, Error or Reasoning", r.reason, counts)
			}
			if res.Model != "stories260k" || res.Model != wantModel || res.Model != req.Model {
				t.Errorf("model = %q, want stories260k (file %q, request %q)", res.Model, wantModel, req.Model)
			}
			if res.HasUsage != r.hasUsage || res.Usage != wantUsage {
				t.Errorf("%s: usage %+v (has %v), want %+v (has %v)", r.reason, res.Usage, res.HasUsage, wantUsage, r.hasUsage)
			}
			if r.hasUsage && res.Usage.OutputTokens != int64(r.maxTokens) {
				t.Errorf("usage output tokens %d, want max_tokens %d", res.Usage.OutputTokens, r.maxTokens)
			}
			if res.FinishReason != "length" || res.FinishReason != wantFinish {
				t.Errorf("finish reason %q, want length (file says %q)", res.FinishReason, wantFinish)
			}
			if string(res.Text) != wantText.String() || res.TextTruncated {
				t.Errorf("text %q (truncated %v), want %q", res.Text, res.TextTruncated, wantText.String())
			}
			if res.Choices != 1 || res.Malformed != 0 || res.ErrorMessage != "" {
				t.Errorf("choices %d malformed %d error %q, want 1, 0, none", res.Choices, res.Malformed, res.ErrorMessage)
			}
		})
	}
}

// TestUnknownTimesNativeFixture checks that the unknown decoder, which ForPath gives a stream in
// a framing the path's API does not use, times the NDJSON /api/chat capture line by line. The
// Ollama decoder's own test of this capture is TestOllamaNativeGolden.
func TestUnknownTimesNativeFixture(t *testing.T) {
	t.Parallel()
	api, dec := ForPath("/api/chat", "text/event-stream")
	defer Put(dec)
	if api != APIUnknown {
		t.Fatalf("api = %q, want %q for an SSE stream on an NDJSON route", api, APIUnknown)
	}
	lines := strings.Split(string(readTestdata(t, "native-api-chat.txt")), "\n")
	n := 0
	for _, l := range lines {
		if dec.Event(nil, []byte(l)) == Content {
			n++
		}
	}
	// 32 tokens (num_predict) plus the final done line, each a non-empty line.
	if n != 33 || dec.Result().ContentEvents != 33 {
		t.Errorf("unknown decoder counted %d content lines, want every one of the 33 non-empty lines", n)
	}
}

func TestOllamaFixtureRequests(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"chat", "completions", "chat_sampled", "native-api-chat"} {
		t.Run(name, func(t *testing.T) {
			body := readTestdata(t, name+".request.json")
			var want fixtureRequest
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatal(err)
			}
			got := ParseRequest(body, 1<<10)
			wantMax := int64(-1)
			if want.MaxTokens != nil {
				wantMax = *want.MaxTokens
			}
			wantPrompt := want.Prompt
			for _, m := range want.Messages {
				wantPrompt += m.Content
			}
			if !got.Valid || got.Model != want.Model || got.Stream != want.Stream ||
				got.IncludeUsage != want.StreamOptions.IncludeUsage || got.MaxTokens != wantMax ||
				got.N != 1 || string(got.Prompt) != wantPrompt || got.PromptTruncated {
				t.Errorf("ParseRequest = %+v (prompt %q), want model %q stream %v include_usage %v max %d prompt %q",
					got, got.Prompt, want.Model, want.Stream, want.StreamOptions.IncludeUsage, wantMax, wantPrompt)
			}
		})
	}
}
