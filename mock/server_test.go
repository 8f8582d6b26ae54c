package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const chatPath, completionsPath = "/v1/chat/completions", "/v1/completions"

func TestChatStreamShape(t *testing.T) {
	_, url := newTestServer(t, Config{RoleChunk: true, Model: "served"})
	resp, body := post(t, url, chatPath,
		`{"model":"asked","messages":[{"role":"user","content":"hello there"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":17}`,
		"X-Request-Id", "req-1")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	if id := resp.Header.Get("X-Request-Id"); id != "req-1" {
		t.Errorf("X-Request-Id %q, want the request's", id)
	}
	s := summarize(t, body)
	if !s.done || s.afterDone != 0 {
		t.Errorf("[DONE] seen %v, %d events after it", s.done, s.afterDone)
	}
	for i, c := range s.chunks {
		if c.Object != "chat.completion.chunk" || c.ID != "chatcmpl-req-1" || c.Model != "asked" || c.Created == 0 {
			t.Errorf("chunk %d header: object %q id %q model %q created %d", i, c.Object, c.ID, c.Model, c.Created)
		}
	}
	first := s.chunks[0].Choices[0]
	if first.Delta == nil || first.Delta.Role == nil || *first.Delta.Role != "assistant" || first.Delta.Content == nil || *first.Delta.Content != "" {
		t.Errorf("first chunk is not role-only: %+v", first)
	}
	if s.roles != 1 || s.contentEv != 17 || s.reasonEv != 0 {
		t.Errorf("roles %d content events %d reasoning events %d, want 1, 17, 0", s.roles, s.contentEv, s.reasonEv)
	}
	if got := o200kCount(t, s.content[0]); got != 17 {
		t.Errorf("o200k count of the content = %d, want 17: %q", got, s.content[0])
	}
	if s.finish[0] != "length" || s.emptyDelta != 0 {
		t.Errorf("finish %q (want length), %d chunks with nothing", s.finish[0], s.emptyDelta)
	}
	last := s.chunks[len(s.chunks)-1]
	if last.Usage == nil || s.usage != 1 {
		t.Fatalf("usage chunk is not the last chunk (%d usage chunks)", s.usage)
	}
	wantPrompt := o200kCount(t, "hello there")
	if u := last.Usage; u.PromptTokens != wantPrompt || u.CompletionTokens != 17 || u.TotalTokens != wantPrompt+17 || u.CompletionTokensDetails != nil {
		t.Errorf("usage %+v, want prompt %d completion 17 and no details", *u, wantPrompt)
	}
	if fr := s.chunks[len(s.chunks)-2].Choices[0]; fr.FinishReason == nil || fr.Delta == nil || fr.Delta.Content != nil {
		t.Errorf("chunk before usage is not an empty-delta finish chunk: %+v", fr)
	}
}

func TestUsageModes(t *testing.T) {
	tests := []struct {
		name        string
		mode        UsageMode
		opts        string
		stream      bool
		wantUsage   bool
		description string
	}{
		{"auto asked", UsageAuto, `,"stream_options":{"include_usage":true}`, true, true, "include_usage turns the usage chunk on"},
		{"auto not asked", UsageAuto, ``, true, false, "streams omit usage unless asked, like OpenAI"},
		{"auto declined", UsageAuto, `,"stream_options":{"include_usage":false}`, true, false, "an explicit false is honoured"},
		{"always", UsageAlways, ``, true, true, "servers that always report usage"},
		{"never asked", UsageNever, `,"stream_options":{"include_usage":true}`, true, false, "servers that ignore stream_options"},
		{"auto unary", UsageAuto, ``, false, true, "non-streaming bodies always have usage"},
		{"never unary", UsageNever, ``, false, false, "never means never, to exercise tokenizer fallbacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestServer(t, Config{Usage: tt.mode})
			_, body := post(t, url, chatPath, fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"stream":%v,"max_tokens":3%s}`, tt.stream, tt.opts))
			got := false
			if tt.stream {
				got = summarize(t, body).usage == 1
			} else {
				got = decodeChunk(t, string(body)).Usage != nil
			}
			if got != tt.wantUsage {
				t.Errorf("usage present %v, want %v (%s)", got, tt.wantUsage, tt.description)
			}
		})
	}
}

func TestStreamVariants(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		path, body     string
		wantContentEv  int
		wantReasonEv   int
		wantContentTok int // per choice
		wantReasonTok  int // per choice
		wantChoices    int
		wantFinish     string
		reason         string
	}{
		{"default length", Config{}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true}`,
			64, 0, 64, 0, 1, "stop", "no max_tokens: OutputTokens (64) and a natural stop"},
		{"max_completion_tokens wins", Config{}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":9,"max_completion_tokens":5}`,
			5, 0, 5, 0, 1, "length", "max_completion_tokens supersedes max_tokens"},
		{"reasoning first", Config{Reasoning: 4}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":10}`,
			6, 4, 6, 4, 1, "length", "reasoning tokens count towards max_tokens"},
		{"reasoning exhausts budget", Config{Reasoning: 50}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":8}`,
			0, 8, 0, 8, 1, "length", "a budget smaller than the reasoning leaves no content"},
		{"multi-token chunks", Config{TokensPerChunk: 3}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":10}`,
			4, 0, 10, 0, 1, "length", "3+3+3+1 tokens"},
		{"chunks split at the reasoning boundary", Config{TokensPerChunk: 4, Reasoning: 5}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":12}`,
			2, 2, 7, 5, 1, "length", "reasoning 4+1, content 4+3: no chunk mixes the two"},
		{"n choices", Config{}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":6,"n":3}`,
			18, 0, 6, 0, 3, "length", "each choice streams its own chunks"},
		{"eos at min_tokens", Config{EOSProbability: 1}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":20,"min_tokens":3}`,
			3, 0, 3, 0, 1, "stop", "certain EOS stops right after min_tokens"},
		{"ignore_eos", Config{EOSProbability: 1}, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":20,"ignore_eos":true}`,
			20, 0, 20, 0, 1, "length", "ignore_eos produces exactly max_tokens"},
		{"completions", Config{Reasoning: 5, RoleChunk: true}, completionsPath, `{"prompt":"once upon","stream":true,"max_tokens":7}`,
			7, 0, 7, 0, 1, "length", "legacy completions neither reason nor send a role chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestServer(t, tt.cfg)
			resp, body := post(t, url, tt.path, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			s := summarize(t, body)
			if s.contentEv != tt.wantContentEv || s.reasonEv != tt.wantReasonEv {
				t.Errorf("content/reasoning events %d/%d, want %d/%d (%s)", s.contentEv, s.reasonEv, tt.wantContentEv, tt.wantReasonEv, tt.reason)
			}
			if len(s.finish) != tt.wantChoices {
				t.Errorf("%d choices finished, want %d (%s)", len(s.finish), tt.wantChoices, tt.reason)
			}
			for c := range tt.wantChoices {
				if got := o200kCount(t, s.content[c]); got != tt.wantContentTok {
					t.Errorf("choice %d: %d content tokens, want %d (%s)", c, got, tt.wantContentTok, tt.reason)
				}
				if got := o200kCount(t, s.reasoning[c]); got != tt.wantReasonTok {
					t.Errorf("choice %d: %d reasoning tokens, want %d (%s)", c, got, tt.wantReasonTok, tt.reason)
				}
				if s.finish[c] != tt.wantFinish {
					t.Errorf("choice %d: finish %q, want %q (%s)", c, s.finish[c], tt.wantFinish, tt.reason)
				}
			}
			if s.roles != 0 || s.usage != 0 || !s.done {
				t.Errorf("roles %d usage %d done %v: want 0, 0, true", s.roles, s.usage, s.done)
			}
		})
	}
}

func TestUnary(t *testing.T) {
	_, url := newTestServer(t, Config{Reasoning: 2})
	resp, body := post(t, url, chatPath, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"image_url","image_url":{"url":"x"}}]}],"max_tokens":9,"n":2}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	c := decodeChunk(t, string(body))
	if c.Object != "chat.completion" || len(c.Choices) != 2 {
		t.Fatalf("object %q with %d choices", c.Object, len(c.Choices))
	}
	for i, ch := range c.Choices {
		m := ch.Message
		if ch.Index != i || m == nil || m.Role != "assistant" || m.ReasoningContent == nil || ch.FinishReason == nil || *ch.FinishReason != "length" {
			t.Fatalf("choice %d malformed: %s", i, body)
		}
		if got := o200kCount(t, m.Content); got != 7 {
			t.Errorf("choice %d content: %d tokens, want 7", i, got)
		}
		if got := o200kCount(t, *m.ReasoningContent); got != 2 {
			t.Errorf("choice %d reasoning: %d tokens, want 2", i, got)
		}
	}
	u := c.Usage
	if u == nil || u.PromptTokens != o200kCount(t, "a b") || u.CompletionTokens != 18 || u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens != 4 {
		t.Errorf("usage %+v: want prompt = text parts only, completion 18 over both choices, reasoning 4", u)
	}

	_, body = post(t, url, completionsPath, `{"prompt":["one prompt"],"max_tokens":4}`)
	c = decodeChunk(t, string(body))
	if c.Object != "text_completion" || len(c.Choices) != 1 || c.Choices[0].Text == nil || o200kCount(t, *c.Choices[0].Text) != 4 {
		t.Errorf("completions body malformed: %s", body)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		method     string
		path, body string
		wantStatus int
		reason     string
	}{
		{"injected", Config{ErrorRate: 1}, "POST", chatPath, `{"messages":[{"role":"user","content":"x"}]}`, 500, "ErrorRate 1 fails every request"},
		{"bad json", Config{}, "POST", chatPath, `{"messages":`, 400, "a truncated body is the client's fault"},
		{"no messages", Config{}, "POST", chatPath, `{"messages":[]}`, 400, "chat needs a message"},
		{"no prompt", Config{}, "POST", completionsPath, `{"max_tokens":3}`, 400, "completions needs a prompt"},
		{"batch prompt", Config{}, "POST", completionsPath, `{"prompt":["a","b"]}`, 400, "prompt batches are not modelled"},
		{"zero max_tokens", Config{}, "POST", chatPath, `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "OpenAI rejects max_tokens < 1"},
		{"max over limit", Config{MaxOutputTokens: 10}, "POST", chatPath, `{"messages":[{"role":"user","content":"x"}],"max_tokens":11}`, 400, "over the context, like a real server"},
		{"n zero", Config{}, "POST", chatPath, `{"messages":[{"role":"user","content":"x"}],"n":0}`, 400, "n must be at least 1"},
		{"bad content", Config{}, "POST", chatPath, `{"messages":[{"role":"user","content":7}]}`, 400, "content is a string or parts"},
		{"wrong method", Config{}, "GET", chatPath, ``, 405, "generation is POST only"},
		{"unknown path", Config{}, "POST", "/v1/embeddings", `{}`, 404, "unmodelled APIs are 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newTestServer(t, tt.cfg)
			req, _ := http.NewRequest(tt.method, url+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e chunk
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if resp.StatusCode != tt.wantStatus || e.Error == nil || e.Error.Code != tt.wantStatus || e.Error.Message == "" {
				t.Errorf("status %d error %+v, want %d with an OpenAI error object (%s)", resp.StatusCode, e.Error, tt.wantStatus, tt.reason)
			}
			st := s.Stats()
			if tt.wantStatus == 500 && st.Errors != 1 || tt.wantStatus != 500 && st.BadRequests != 1 {
				t.Errorf("stats %+v do not count the failure", st)
			}
		})
	}
}

func TestStreamError(t *testing.T) {
	s, url := newTestServer(t, Config{StreamErrorRate: 1, LogEvents: true})
	resp, body := post(t, url, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":50}`, "X-Request-Id", "e")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: a mid-stream error keeps the 200", resp.StatusCode)
	}
	sum := summarize(t, body)
	if sum.errors != 1 || !sum.done || sum.contentEv >= 50 || len(sum.finish) != 0 || sum.usage != 0 {
		t.Errorf("errors %d done %v content %d finish %v usage %d: want one error event then [DONE], no finish", sum.errors, sum.done, sum.contentEv, sum.finish, sum.usage)
	}
	if e := sum.chunks[len(sum.chunks)-1].Error; e == nil || e.Code != 500 {
		t.Errorf("last chunk before [DONE] is not the error: %+v", e)
	}
	tr, ok := s.TraceByID("e")
	if !ok || tr.CompletionTokens != sum.contentEv || s.Stats().StreamErrors != 1 {
		t.Errorf("trace %+v / stats %+v disagree with %d tokens received", tr, s.Stats(), sum.contentEv)
	}
}

func TestModelsAndHealth(t *testing.T) {
	_, url := newTestServer(t, Config{Model: `m"1`})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != `m"1` {
		t.Errorf("models: %v %+v", err, list)
	}
	resp, err = http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health status %d", resp.StatusCode)
	}
}

func TestSeedReproducesText(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":30}`
	texts := make([]string, 3)
	for i, seed := range []int64{7, 7, 8} {
		_, url := newTestServer(t, Config{Seed: seed})
		_, b := post(t, url, chatPath, body)
		texts[i] = decodeChunk(t, string(b)).Choices[0].Message.Content
	}
	if texts[0] != texts[1] || texts[0] == texts[2] {
		t.Errorf("same seed gave different text or different seeds the same:\n%q\n%q\n%q", texts[0], texts[1], texts[2])
	}
}
