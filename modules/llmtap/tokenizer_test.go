package llmtap_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
	"github.com/llmtap/llmtap/telemetry/tokens/hf"
)

// TestTokenizerOption runs two sites through real Caddy to a mock that reports no usage: one
// llmtap handler counts with a Hugging Face tokenizer file (the tokenizer option), the other
// with the default o200k_base. Each record must carry its own handler's counts of the prompt
// and of the streamed text, and name the tokenizer that made them.
func TestTokenizerOption(t *testing.T) {
	file := filepath.Join("..", "..", "telemetry", "tokens", "hf", "testdata", "stories260k-legacy.json")
	up := startUpstream(t, streamingMock())
	p, _ := loadProxy(t, "",
		site{body: "\tllmtap {\n\t\ttokenizer " + file + "\n\t}\n\treverse_proxy " + up.addr},
		proxySite(up.addr, ""))
	ref, err := hf.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	body := chatBody("e2e-model", streamTokens, true, false)
	prompt := decode.ParseRequestFor("openai.chat", body, len(body)).Prompt
	c := newClient(t)
	texts := map[string]string{}
	for i, id := range []string{"tok-hf", "tok-o200k"} {
		req, err := testkit.NewPost(t.Context(), p.sites[i]+"/v1/chat/completions", id, body)
		if err != nil {
			t.Fatal(err)
		}
		res, err := postTimed(c, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		texts[id] = streamedText(t, res.body)
	}
	recs := p.records(t)
	for _, c := range []struct {
		id, tokenizer string
		count         func([]byte) (int, error)
	}{
		{"tok-hf", "hf:stories260k-legacy", ref.Count},
		{"tok-o200k", "o200k_base", tokens.Default.Count},
	} {
		rec, ok := recs[c.id]
		if !ok {
			t.Fatalf("%s: no record", c.id)
		}
		wantIn, _ := c.count(prompt)
		wantOut, _ := c.count([]byte(texts[c.id]))
		if rec.Tokenizer != c.tokenizer || rec.InputTokensSource != record.SourceTokenizer || rec.OutputTokensSource != record.SourceTokenizer {
			t.Errorf("%s: tokenizer %q, sources %q and %q; want %q, tokenizer, tokenizer",
				c.id, rec.Tokenizer, rec.InputTokensSource, rec.OutputTokensSource, c.tokenizer)
		}
		if rec.InputTokens != int64(wantIn) || rec.OutputTokens != int64(wantOut) {
			t.Errorf("%s: %d input and %d output tokens, want %d and %d (%s)", c.id, rec.InputTokens, rec.OutputTokens, wantIn, wantOut, c.tokenizer)
		}
	}
	// The two tokenizers must disagree on this text, or the test could not tell them apart.
	hfIn, _ := ref.Count(prompt)
	oIn, _ := tokens.Count(prompt)
	if hfIn == oIn {
		t.Fatalf("both tokenizers count %d prompt tokens: the test cannot tell them apart", hfIn)
	}
}

// streamedText joins the content of a streamed chat completion.
func streamedText(t *testing.T, body []byte) string {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, ch := range chunk.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	if b.Len() == 0 {
		t.Fatal("the stream carried no text")
	}
	return b.String()
}
