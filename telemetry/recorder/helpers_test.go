package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chat returns a chat completion body whose user message is text.
func chat(model, text string, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":      model,
		"max_tokens": maxTokens,
		"messages":   []map[string]string{{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}},
	})
	return b
}

// rec returns a finalized-looking record of request i that arrived at start.
func rec(i int, start time.Time, body []byte) *record.Record {
	return &record.Record{
		RequestID: fmt.Sprintf("req-%d", i), Class: record.ClassLive, Model: "m", Path: "/v1/chat/completions",
		API: "openai.chat", Stream: true, Status: 200, Start: start,
		InputTokens: int64(10 + i), InputTokensSource: record.SourceUsage,
		OutputTokens: int64(5 + i), OutputTokensSource: record.SourceUsage, RequestBody: body,
	}
}

// open starts a recorder in a fresh folder under the test's temporary folder, closed at the end.
func open(t *testing.T, o Options) (*Recorder, string) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), "rec")
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r, o.Dir
}

// closeRec closes r, failing the test on error.
func closeRec(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// filesOf lists dir's files of kind, sorted.
func filesOf(t *testing.T, dir, kind string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, kind+"-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// readAll reads every file of kind in dir with format/trace's reader, checking the format.
func readAll(t *testing.T, dir, kind string, want trace.Format) ([]trace.Request, []trace.Info) {
	t.Helper()
	var reqs []trace.Request
	var infos []trace.Info
	for _, p := range filesOf(t, dir, kind) {
		rs, info, err := trace.ReadFile(p, trace.Options{})
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		if len(rs) > 0 && info.Format != want {
			t.Fatalf("%s read as %s, want %s", p, info.Format, want)
		}
		reqs = append(reqs, rs...)
		infos = append(infos, info)
	}
	return reqs, infos
}
