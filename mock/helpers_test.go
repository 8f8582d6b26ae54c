package mock

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind, which
// covers every server the tests start and stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// chunk is the union of the OpenAI stream chunk and body shapes the tests
// read. Pointer fields tell absent from zero.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Message *struct {
			Role             string  `json:"role"`
			Content          string  `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Text         *string         `json:"text"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens            int `json:"prompt_tokens"`
		CompletionTokens        int `json:"completion_tokens"`
		TotalTokens             int `json:"total_tokens"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// sseEvents splits an SSE body into the payloads of its data: lines,
// failing on anything else, and checks the framing is exact.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", tail(body))
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event is not one data line: %q", ev)
		}
		out = append(out, data)
	}
	return out
}

func tail(b []byte) []byte {
	if len(b) > 80 {
		return b[len(b)-80:]
	}
	return b
}

// decodeChunk parses one JSON chunk strictly.
func decodeChunk(t testing.TB, data string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk is not JSON: %v: %s", err, data)
	}
	return c
}

// newTestServer starts s on an httptest server closed at cleanup.
func newTestServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// post sends body as JSON to url+path with optional header pairs and
// returns the response with its body read.
func post(t testing.TB, url, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// o200kCount counts s with the tokenizer the word list is built for.
func o200kCount(t testing.TB, s string) int {
	t.Helper()
	n, err := o200k().Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// streamSummary is what a client would measure from a chat or completions
// stream.
type streamSummary struct {
	chunks     []chunk
	roles      int
	content    map[int]string // per choice
	reasoning  map[int]string
	contentEv  int // content events (content or text non-empty)
	reasonEv   int
	finish     map[int]string
	usage      int // usage chunks
	lastUsage  *chunk
	errors     int
	done       bool
	afterDone  int // events after [DONE], must be 0
	emptyDelta int // chunks with neither role, content, reasoning nor finish
}

func summarize(t testing.TB, body []byte) streamSummary {
	t.Helper()
	s := streamSummary{content: map[int]string{}, reasoning: map[int]string{}, finish: map[int]string{}}
	for _, data := range sseEvents(t, body) {
		if s.done {
			s.afterDone++
			continue
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		c := decodeChunk(t, data)
		s.chunks = append(s.chunks, c)
		if c.Error != nil {
			s.errors++
			continue
		}
		if c.Usage != nil {
			s.usage++
			s.lastUsage = &c
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has choices: %s", data)
			}
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk has %d choices, want 1: %s", len(c.Choices), data)
		}
		ch := c.Choices[0]
		got := false
		if ch.FinishReason != nil {
			s.finish[ch.Index] = *ch.FinishReason
			got = true
		}
		if ch.Text != nil && *ch.Text != "" {
			s.content[ch.Index] += *ch.Text
			s.contentEv++
			got = true
		}
		if d := ch.Delta; d != nil {
			if d.Role != nil {
				s.roles++
				got = true
			}
			if d.Content != nil && *d.Content != "" {
				s.content[ch.Index] += *d.Content
				s.contentEv++
				got = true
			}
			if d.ReasoningContent != nil && *d.ReasoningContent != "" {
				s.reasoning[ch.Index] += *d.ReasoningContent
				s.reasonEv++
				got = true
			}
		}
		if !got {
			s.emptyDelta++
		}
	}
	return s
}
