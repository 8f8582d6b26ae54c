package decode

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files testdata/*.golden.json")

// goldenStreams are the recorded streams of the other APIs: native-api-chat.txt is a real
// Ollama capture (see telemetry/framing/testdata/README.md); the others are written after the
// examples of the APIs' own documentation.
var goldenStreams = []struct {
	file, path, ctype, reason string
}{
	{"responses.txt", "/v1/responses", "text/event-stream", "a reasoning model: summary deltas, then text; usage only in response.completed"},
	{"responses_tool.txt", "/v1/responses", "text/event-stream", "a function call cut by max_output_tokens: response.incomplete ends it"},
	{"anthropic.txt", "/v1/messages", "text/event-stream", "thinking, text and a tool call; cumulative usage in message_delta; message_stop ends it"},
	{"anthropic_compaction.txt", "/v1/messages", "text/event-stream", "a compaction block before the answer; usage.iterations counts the compaction pass"},
	{"tgi.txt", "/generate_stream", "text/event-stream", "a TGI stream ending with a special EOS token and details; a keep-alive comment"},
	{"tgi_length.txt", "/generate_stream", "text/event-stream", "a TGI stream cut by max_new_tokens: the final event is also the last token"},
	{"native-api-chat.txt", "/api/chat", "application/x-ndjson", "the real Ollama /api/chat capture: 32 tokens, then the done line"},
	{"ollama-generate.txt", "/api/generate", "application/x-ndjson", "Ollama /api/generate with thinking"},
}

// goldenEvents splits a capture into (type, data) pairs: SSE for text/event-stream, lines else.
func goldenEvents(t testing.TB, file, ctype string) []ev {
	b := readTestdata(t, file)
	var out []ev
	if ctype == "text/event-stream" {
		for _, e := range splitSSE(string(b)) {
			out = append(out, ev(e))
		}
		return out
	}
	for _, l := range splitLines(b) {
		out = append(out, ev{data: string(l)})
	}
	return out
}

// golden is what a golden file holds: the kind of every event and the result.
type golden struct {
	API    string
	Kinds  []string
	Result xview
}

func TestGoldenStreams(t *testing.T) {
	for _, g := range goldenStreams {
		t.Run(g.file, func(t *testing.T) {
			api, dec := ForPath(g.path, g.ctype)
			defer Put(dec)
			got := golden{API: api}
			for _, e := range goldenEvents(t, g.file, g.ctype) {
				got.Kinds = append(got.Kinds, dec.Event([]byte(e.typ), []byte(e.data)).String())
			}
			got.Result = xviewOf(dec.Result())
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			name := filepath.Join("testdata", strings.TrimSuffix(g.file, ".txt")+".golden.json")
			if *update {
				if err := os.WriteFile(name, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("%s: %s changed (run go test -update and review the diff):\n%s", g.reason, name, b)
			}
			if !ExpectsDone(api) || !got.Result.Ended {
				t.Errorf("%s: a complete %s stream must end (Ended) and its API expect an end event", g.reason, api)
			}
		})
	}
}

// ollamaLine is one line of an Ollama native stream, read with encoding/json.
type ollamaLine struct {
	Model              string `json:"model"`
	Response           string `json:"response"`
	Thinking           string `json:"thinking"`
	Message            struct{ Content, Thinking string }
	Done               bool   `json:"done"`
	DoneReason         string `json:"done_reason"`
	PromptEvalCount    int64  `json:"prompt_eval_count"`
	EvalCount          int64  `json:"eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"`
	EvalDuration       int64  `json:"eval_duration"`
	LoadDuration       int64  `json:"load_duration"`
	TotalDuration      int64  `json:"total_duration"`
}

// TestOllamaNativeGolden checks the Ollama decoder against the facts of the captures, read
// independently with encoding/json: the final line's counts, reason and durations, one content
// event per line with text, and the concatenated text.
func TestOllamaNativeGolden(t *testing.T) {
	t.Parallel()
	for _, r := range []struct{ file, path, reason string }{
		{"native-api-chat.txt", "/api/chat", "the real capture (num_predict 32)"},
		{"ollama-generate.txt", "/api/generate", "generate lines with thinking"},
	} {
		t.Run(r.file, func(t *testing.T) {
			var last ollamaLine
			var text, reasoning strings.Builder
			contentLines, reasoningLines := 0, 0
			lines := splitLines(readTestdata(t, r.file))
			for _, l := range lines {
				last = ollamaLine{}
				if err := json.Unmarshal(l, &last); err != nil {
					t.Fatal(err)
				}
				c, th := last.Response+last.Message.Content, last.Thinking+last.Message.Thinking
				text.WriteString(c)
				reasoning.WriteString(th)
				switch {
				case c != "":
					contentLines++
				case th != "":
					reasoningLines++
				}
			}
			if !last.Done {
				t.Fatalf("the capture's last line is not done:true")
			}
			api, dec := ForPath(r.path, "application/x-ndjson")
			defer Put(dec)
			var kinds []Kind
			for _, l := range lines {
				kinds = append(kinds, dec.Event(nil, l))
			}
			res := dec.Result()
			wantT := ServerTimings{Format: FormatOllama,
				PromptEvalCount: last.PromptEvalCount, EvalCount: last.EvalCount,
				LoadDuration: time.Duration(last.LoadDuration), PromptEvalDuration: time.Duration(last.PromptEvalDuration),
				EvalDuration: time.Duration(last.EvalDuration), TotalDuration: time.Duration(last.TotalDuration),
			}
			if res.ServerTimings != wantT {
				t.Errorf("%s (%s): timings %+v, the final line says %+v", r.reason, api, res.ServerTimings, wantT)
			}
			if res.Usage.InputTokens != last.PromptEvalCount || res.Usage.OutputTokens != last.EvalCount || !res.HasUsage {
				t.Errorf("%s: usage %+v, the final line says prompt %d eval %d", r.reason, res.Usage, last.PromptEvalCount, last.EvalCount)
			}
			if res.FinishReason != last.DoneReason || res.Model != last.Model {
				t.Errorf("%s: finish %q model %q, want %q %q", r.reason, res.FinishReason, res.Model, last.DoneReason, last.Model)
			}
			if res.ContentEvents != contentLines || res.ReasoningEvents != reasoningLines {
				t.Errorf("%s: %d content and %d reasoning events, want %d and %d", r.reason, res.ContentEvents, res.ReasoningEvents, contentLines, reasoningLines)
			}
			if string(res.Text) != text.String() || string(res.ReasoningText) != reasoning.String() {
				t.Errorf("%s: text %q / %q, want %q / %q", r.reason, res.Text, res.ReasoningText, text.String(), reasoning.String())
			}
			if kinds[len(kinds)-1] != Done || !res.Ended {
				t.Errorf("%s: the done line must be Done and set Ended, got %v", r.reason, kinds[len(kinds)-1])
			}
			if r.file == "native-api-chat.txt" && (last.EvalCount != 32 || contentLines != 32) {
				t.Errorf("the capture asked for num_predict 32: eval_count %d, %d content lines", last.EvalCount, contentLines)
			}
		})
	}
}
