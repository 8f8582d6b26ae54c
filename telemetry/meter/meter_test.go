package meter

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// read is one socket read of a capture: when it arrived and what it held.
type read struct {
	TMs  float64 `json:"t_ms"`
	Data string  `json:"data"`
}

func loadCapture(t *testing.T, name string) (reads []read, request []byte, contentType string) {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".timed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r read
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		reads = append(reads, r)
	}
	request, err = os.ReadFile("testdata/" + name + ".request.json")
	if err != nil {
		t.Fatal(err)
	}
	headers, err := os.ReadFile("testdata/" + name + ".headers.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(headers), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Type") {
			contentType = strings.TrimSpace(v)
		}
	}
	return reads, request, contentType
}

// replay feeds a capture to a meter read by read, each at its recorded time after t0.
func replay(t *testing.T, name, path string) *record.Record {
	t.Helper()
	reads, request, ct := loadCapture(t, name)
	pool := NewPool(Options{})
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	m := pool.Get(t0, path)
	m.Headers(http.StatusOK, http.Header{"Content-Type": {ct}}, at(reads[0].TMs))
	for _, r := range reads {
		m.Write([]byte(r.Data), at(r.TMs))
	}
	m.RequestBody(request, false)
	rec := m.Finish(at(reads[len(reads)-1].TMs), "", "")
	m.Release()
	Finalize(rec, nil)
	return rec
}

// contentReads returns the times of the reads holding a content event's first byte, derived
// independently of the meter: an SSE data line with a non-empty "content" or "text".
func contentReads(t *testing.T, name string) []float64 {
	reads, _, _ := loadCapture(t, name)
	var times []float64
	for _, r := range reads {
		for _, ev := range strings.Split(r.Data, "\n\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Text  string `json:"text"`
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatal(err)
			}
			for _, c := range chunk.Choices {
				if c.Text != "" || c.Delta.Content != "" {
					times = append(times, r.TMs)
					break
				}
			}
		}
	}
	return times
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestRealCaptures(t *testing.T) {
	tests := []struct {
		name, path   string
		wantOutput   int64
		wantSource   string
		wantFinish   string
		wantInputSrc string
	}{
		{"chat", "/v1/chat/completions", 128, record.SourceUsage, "length", record.SourceUsage},
		{"completions", "/v1/completions", 64, record.SourceUsage, "length", record.SourceUsage},
		{"chat_sampled", "/v1/chat/completions", -1, record.SourceTokenizer, "length", record.SourceTokenizer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := replay(t, tt.name, tt.path)
			times := contentReads(t, tt.name)
			if rec.ContentEvents != len(times) {
				t.Fatalf("content events %d, want %d", rec.ContentEvents, len(times))
			}
			if rec.TTFTMs == nil || !near(*rec.TTFTMs, times[0]) {
				t.Errorf("ttft %v, want %v (first content read)", rec.TTFTMs, times[0])
			}
			if rec.TTFOMs == nil || !near(*rec.TTFOMs, times[0]) {
				t.Errorf("ttfo %v, want %v (no reasoning: same as ttft)", rec.TTFOMs, times[0])
			}
			if rec.TTSTMs == nil || !near(*rec.TTSTMs, times[1]-times[0]) {
				t.Errorf("ttst %v, want %v", rec.TTSTMs, times[1]-times[0])
			}
			last := times[len(times)-1]
			if rec.RequestLatencyMs == nil || !near(*rec.RequestLatencyMs, last) {
				t.Errorf("request latency %v, want %v (last content read, not [DONE])", rec.RequestLatencyMs, last)
			}
			if len(rec.InterChunkMs) != len(times)-1 {
				t.Fatalf("%d inter-chunk gaps, want %d", len(rec.InterChunkMs), len(times)-1)
			}
			for i, g := range rec.InterChunkMs {
				if !near(g, times[i+1]-times[i]) {
					t.Fatalf("gap %d = %v, want %v", i, g, times[i+1]-times[i])
				}
			}
			if rec.OutputTokensSource != tt.wantSource {
				t.Errorf("output tokens source %q, want %q", rec.OutputTokensSource, tt.wantSource)
			}
			want := tt.wantOutput
			if want < 0 {
				// No usage: the tokenizer's count of the streamed text.
				var text strings.Builder
				for _, ev := range streamedText(t, tt.name) {
					text.WriteString(ev)
				}
				n, err := tokens.Count([]byte(text.String()))
				if err != nil {
					t.Fatal(err)
				}
				want = int64(n)
			}
			if rec.OutputTokens != want {
				t.Errorf("output tokens %d, want %d", rec.OutputTokens, want)
			}
			if rec.InputTokensSource != tt.wantInputSrc {
				t.Errorf("input tokens source %q, want %q", rec.InputTokensSource, tt.wantInputSrc)
			}
			wantITL := (last - times[0]) / float64(rec.OutputTokens-1)
			if rec.ITLMs == nil || !near(*rec.ITLMs, wantITL) {
				t.Errorf("itl %v, want %v", rec.ITLMs, wantITL)
			}
			if rec.Finish != tt.wantFinish || rec.Model != "stories260k" || rec.Error != "" || !rec.Stream {
				t.Errorf("finish %q model %q error %q stream %v", rec.Finish, rec.Model, rec.Error, rec.Stream)
			}
		})
	}
}

func streamedText(t *testing.T, name string) []string {
	reads, _, _ := loadCapture(t, name)
	var out []string
	for _, r := range reads {
		for _, ev := range strings.Split(r.Data, "\n\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatal(err)
			}
			for _, c := range chunk.Choices {
				out = append(out, c.Delta.Content)
			}
		}
	}
	return out
}

func TestOllamaNativeNDJSON(t *testing.T) {
	rec := replay(t, "native-api-chat", "/api/chat")
	if !rec.Stream || rec.API != "ollama.chat" || rec.Error != "" {
		t.Fatalf("stream %v api %q error %q, want a clean ollama.chat NDJSON stream", rec.Stream, rec.API, rec.Error)
	}
	// The server's own figures, read independently from the final line.
	reads, _, _ := loadCapture(t, "native-api-chat")
	var all strings.Builder
	for _, r := range reads {
		all.WriteString(r.Data)
	}
	lines := strings.Split(strings.TrimSpace(all.String()), "\n")
	var final struct {
		PromptEvalCount    int64 `json:"prompt_eval_count"`
		EvalCount          int64 `json:"eval_count"`
		PromptEvalDuration int64 `json:"prompt_eval_duration"`
		EvalDuration       int64 `json:"eval_duration"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil {
		t.Fatal(err)
	}
	if rec.OutputTokens != final.EvalCount || rec.OutputTokensSource != record.SourceUsage || rec.InputTokens != final.PromptEvalCount {
		t.Fatalf("output %d (%s) input %d; want eval_count %d and prompt_eval_count %d from the server",
			rec.OutputTokens, rec.OutputTokensSource, rec.InputTokens, final.EvalCount, final.PromptEvalCount)
	}
	if rec.Server == nil || !near(rec.Server.EvalMs, float64(final.EvalDuration)/1e6) || !near(rec.Server.PromptEvalMs, float64(final.PromptEvalDuration)/1e6) {
		t.Fatalf("server timings %+v, want eval %d ns and prompt eval %d ns", rec.Server, final.EvalDuration, final.PromptEvalDuration)
	}
	if rec.ContentEvents != int(final.EvalCount) {
		t.Fatalf("content events %d, want one per generated token (%d)", rec.ContentEvents, final.EvalCount)
	}
}

// feed runs a synthetic exchange through a meter: status, content type, then writes at the
// given millisecond offsets.
func feed(path string, status int, ct string, writes []string, offsets []float64, failure string) *record.Record {
	pool := NewPool(Options{MaxInterChunk: 3})
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	m := pool.Get(t0, path)
	m.Headers(status, http.Header{"Content-Type": {ct}}, at(1))
	for i, w := range writes {
		m.Write([]byte(w), at(offsets[i]))
	}
	rec := m.Finish(at(offsets[len(offsets)-1]+1), failure, "")
	m.Release()
	Finalize(rec, nil)
	return rec
}

func chunk(delta string) string {
	return `data: {"model":"m","choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
}

func TestMeterRules(t *testing.T) {
	sse := "text/event-stream"
	role := chunk(`{"role":"assistant","content":""}`)
	usage := `data: {"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}` + "\n\n"
	done := "data: [DONE]\n\n"
	tests := []struct {
		name    string
		status  int
		writes  []string
		offsets []float64
		failure string
		check   func(t *testing.T, r *record.Record)
	}{
		{"a role-only first chunk is not the first token", 200,
			[]string{role, chunk(`{"content":"a"}`), chunk(`{"content":"b"}`), chunk(`{"content":"c"}`), usage, done},
			[]float64{5, 10, 20, 30, 31, 32}, "",
			func(t *testing.T, r *record.Record) {
				if *r.TTFTMs != 10 || *r.RequestLatencyMs != 30 || *r.ITLMs != 10 || r.OutputTokens != 3 || r.InputTokens != 7 {
					t.Fatalf("ttft %v latency %v itl %v out %d in %d", *r.TTFTMs, *r.RequestLatencyMs, *r.ITLMs, r.OutputTokens, r.InputTokens)
				}
			}},
		{"reasoning first: ttft at the reasoning, ttfo at the first answer", 200,
			[]string{chunk(`{"reasoning_content":"hm"}`), chunk(`{"reasoning_content":"ok"}`), chunk(`{"content":"yes"}`), done},
			[]float64{10, 20, 40, 41}, "",
			func(t *testing.T, r *record.Record) {
				if *r.TTFTMs != 10 || *r.TTFOMs != 40 || *r.TTSTMs != 10 {
					t.Fatalf("ttft %v ttfo %v ttst %v", *r.TTFTMs, *r.TTFOMs, *r.TTSTMs)
				}
				if r.ReasoningTokens < 1 || r.OutputTokens <= r.ReasoningTokens {
					t.Fatalf("reasoning tokens %d of output %d: output must include reasoning", r.ReasoningTokens, r.OutputTokens)
				}
			}},
		{"a stream without [DONE] was cut short", 200,
			[]string{chunk(`{"content":"a"}`)}, []float64{10}, "",
			func(t *testing.T, r *record.Record) {
				if r.Error != record.ErrTruncated {
					t.Fatalf("error %q, want truncated", r.Error)
				}
			}},
		{"a stream that ends inside an event is truncated", 200,
			[]string{chunk(`{"content":"a"}`), `data: {"choi`}, []float64{10, 20}, "",
			func(t *testing.T, r *record.Record) {
				if r.Error != record.ErrTruncated || r.ContentEvents != 1 {
					t.Fatalf("error %q content %d", r.Error, r.ContentEvents)
				}
			}},
		{"an error object inside the stream", 200,
			[]string{chunk(`{"content":"a"}`), `data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n", done},
			[]float64{10, 20, 21}, "",
			func(t *testing.T, r *record.Record) {
				if r.Error != record.ErrStream || r.ErrorMsg != "boom" {
					t.Fatalf("error %q %q", r.Error, r.ErrorMsg)
				}
			}},
		{"an HTTP error status wins over what the body says", 503,
			[]string{`{"error":{"message":"overloaded"}}`}, []float64{10}, "",
			func(t *testing.T, r *record.Record) {
				if r.Error != record.ErrHTTP || r.RequestLatencyMs != nil {
					t.Fatalf("error %q latency %v", r.Error, r.RequestLatencyMs)
				}
			}},
		{"the caller's failure is recorded as is", 200,
			[]string{chunk(`{"content":"a"}`)}, []float64{10}, record.ErrCanceled,
			func(t *testing.T, r *record.Record) {
				if r.Error != record.ErrCanceled {
					t.Fatalf("error %q", r.Error)
				}
			}},
		{"inter-chunk gaps beyond the cap are counted, not kept", 200,
			[]string{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`), chunk(`{"content":"c"}`), chunk(`{"content":"d"}`), chunk(`{"content":"e"}`), done},
			[]float64{10, 11, 12, 13, 14, 15}, "",
			func(t *testing.T, r *record.Record) {
				if len(r.InterChunkMs) != 3 || r.InterChunkDropped != 1 {
					t.Fatalf("kept %d gaps, dropped %d; want 3 and 1", len(r.InterChunkMs), r.InterChunkDropped)
				}
			}},
		{"tool-call-only and refusal responses are recorded distinctly, with their finish reason", 200,
			[]string{chunk(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}`),
				chunk(`{"refusal":"no"}`),
				`data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n", done},
			[]float64{10, 20, 21, 22}, "",
			func(t *testing.T, r *record.Record) {
				if !r.ToolCalls || !r.Refusal || r.Finish != "tool_calls" || r.ContentEvents != 2 || *r.TTFTMs != 10 {
					t.Fatalf("tool calls %v refusal %v finish %q content %d ttft %v", r.ToolCalls, r.Refusal, r.Finish, r.ContentEvents, *r.TTFTMs)
				}
			}},
		{"n=2 choices are counted and either choice's content is content", 200,
			[]string{`data: {"model":"m","choices":[{"index":1,"delta":{"content":"x"}}]}` + "\n\n",
				`data: {"model":"m","choices":[{"index":0,"delta":{"content":"y"}}]}` + "\n\n", done},
			[]float64{10, 12, 13}, "",
			func(t *testing.T, r *record.Record) {
				if r.Choices != 2 || r.ContentEvents != 2 || *r.TTFTMs != 10 {
					t.Fatalf("choices %d content %d ttft %v", r.Choices, r.ContentEvents, *r.TTFTMs)
				}
			}},
		{"invalid JSON events are counted as malformed", 200,
			[]string{"data: {nope\n\n", "data: [DONE]\n\n"}, []float64{10, 11}, "",
			func(t *testing.T, r *record.Record) {
				if r.Malformed != 1 || r.Error != record.ErrMalformed {
					t.Fatalf("malformed %d error %q", r.Malformed, r.Error)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, feed("/v1/chat/completions", tt.status, sse, tt.writes, tt.offsets, tt.failure))
		})
	}
}

func TestNonStreaming(t *testing.T) {
	body := `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`
	r := feed("/v1/chat/completions", 200, "application/json", []string{body[:40], body[40:]}, []float64{30, 31}, "")
	if r.Stream || r.TTFTMs != nil || r.ITLMs != nil {
		t.Fatalf("stream %v ttft %v itl %v: a non-streaming response has no token timing", r.Stream, r.TTFTMs, r.ITLMs)
	}
	if r.RequestLatencyMs == nil || !near(*r.RequestLatencyMs, r.DurationMs) || r.OutputTokens != 2 || r.Finish != "stop" {
		t.Fatalf("latency %v duration %v output %d finish %q", r.RequestLatencyMs, r.DurationMs, r.OutputTokens, r.Finish)
	}
}

func BenchmarkMeterChatStream(b *testing.B) {
	raw, err := os.ReadFile("testdata/chat.timed.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var writes [][]byte
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r read
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			b.Fatal(err)
		}
		writes = append(writes, []byte(r.Data))
	}
	pool := NewPool(Options{})
	h := http.Header{"Content-Type": {"text/event-stream"}}
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		t0 := time.Now()
		m := pool.Get(t0, "/v1/chat/completions")
		m.Headers(200, h, t0)
		for _, w := range writes {
			m.Write(w, t0)
		}
		r := m.Finish(t0, "", "")
		events += r.Events
		m.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

func TestCancelAfterTheEndIsNotAFailure(t *testing.T) {
	done := "data: [DONE]\n\n"
	r := feed("/v1/chat/completions", 200, "text/event-stream",
		[]string{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`), done}, []float64{10, 20, 21}, record.ErrCanceled)
	if r.Error != "" {
		t.Fatalf("error %q for a stream whose [DONE] arrived before the client left", r.Error)
	}
	r = feed("/v1/chat/completions", 200, "text/event-stream",
		[]string{chunk(`{"content":"a"}`)}, []float64{10}, record.ErrCanceled)
	if r.Error != record.ErrCanceled {
		t.Fatalf("error %q for a stream the client left mid-way, want client_canceled", r.Error)
	}
}

// TestNowIsMonotonicFromStart checks that Now reads the time on t0's monotonic clock: never
// before t0, in step with time.Now, and with a monotonic reading, so durations taken from it
// are the meter's own.
func TestNowIsMonotonicFromStart(t *testing.T) {
	t0 := time.Now()
	m := NewPool(Options{}).Get(t0, "/v1/chat/completions")
	defer m.Release()
	before := time.Now()
	at := m.Now()
	after := time.Now()
	if at.Before(before) || at.After(after) {
		t.Fatalf("Now %v lies outside [%v, %v]", at, before, after)
	}
	if at.Round(0) == at {
		t.Fatal("Now carries no monotonic clock reading")
	}
	if d := at.Sub(t0); d < 0 || d > after.Sub(t0) {
		t.Fatalf("Now is %v after t0, time.Now %v", d, after.Sub(t0))
	}
}
