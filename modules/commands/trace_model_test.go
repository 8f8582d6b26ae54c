package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmtap/llmtap/mock"
)

// recordedTrace is a trace file as llmtap's recorder writes it (`record { files trace }`):
// mooncake lines that each name the model.
const recordedTrace = `{"timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [0], "model": "rec-model"}
{"timestamp": 5.25, "input_length": 30, "output_length": 2, "hash_ids": [1], "model": "rec-model"}
{"timestamp": 9, "input_length": 20, "output_length": 2, "hash_ids": [2], "model": "rec-model"}
`

// TestReplayOwnTraceNamesTheModel replays llmtap's own trace file without --model: the lines
// name the model, so the replay needs no flag and sends that model.
func TestReplayOwnTraceNamesTheModel(t *testing.T) {
	mock, err := mock.New(fastMock())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	models := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct{ Model string }
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		models[body.Model]++
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		mock.ServeHTTP(w, r)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "trace-20260101T000000Z.jsonl")
	if err := os.WriteFile(path, []byte(recordedTrace), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runReplayArgs(t, "--url", srv.URL, "--artifact-dir", t.TempDir(), path)
	if code != 0 {
		t.Fatalf("exit %d without --model on a trace whose lines name the model\n%s", code, out)
	}
	if models["rec-model"] != 3 || len(models) != 1 {
		t.Errorf("models sent %v, want rec-model 3 times", models)
	}
}

// TestTraceConvertKeepsModel converts llmtap's trace file and its records: the model of each
// request stays on its line.
func TestTraceConvertKeepsModel(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "trace.jsonl")
	recs := filepath.Join(dir, "records.jsonl")
	os.WriteFile(tr, []byte(recordedTrace), 0o600)
	os.WriteFile(recs, []byte(`{"request_id":"a","start":"2025-01-01T00:00:02Z","model":"m-a","input_tokens":600,"output_tokens":5,"error":""}
{"request_id":"b","start":"2025-01-01T00:00:01.5Z","model":"m-b","input_tokens":100,"output_tokens":1,"error":""}
`), 0o600)
	for _, c := range []struct {
		in   string
		want []string
	}{
		{tr, []string{"rec-model", "rec-model", "rec-model"}},
		{recs, []string{"m-b", "m-a"}},
	} {
		code, stdout, stderr, err := runTraceCmd(t, "convert", "--to", "mooncake", c.in, "-")
		if code != 0 || err != nil {
			t.Fatalf("%s: code %d, err %v\n%s", c.in, code, err, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != len(c.want) {
			t.Fatalf("%s: %d lines, want %d:\n%s", c.in, len(lines), len(c.want), stdout)
		}
		for i, l := range lines {
			var v struct{ Model string }
			if err := json.Unmarshal([]byte(l), &v); err != nil || v.Model != c.want[i] {
				t.Errorf("%s: line %d %s: model %q, want %q", filepath.Base(c.in), i+1, l, v.Model, c.want[i])
			}
		}
	}
}

// TestTraceStatsShortTrace checks the rate line of a trace shorter than a minute: the mean
// over its span, and no "peak minute" (which, counted over 60 s, fell below the mean).
func TestTraceStatsShortTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.jsonl")
	var b strings.Builder
	for i := range 20 { // 20 arrivals 0.5 s apart: 9.5 s, 2 req/s
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 10, "output_length": 2, "hash_ids": []}`+"\n", i*500)
	}
	os.WriteFile(path, []byte(b.String()), 0o600)
	code, out, _, err := runTraceCmd(t, "stats", path)
	if code != 0 || err != nil {
		t.Fatalf("code %d, err %v", code, err)
	}
	if !strings.Contains(out, "2.000 req/s") || strings.Contains(out, "peak minute 0.3") || !strings.Contains(out, "no peak minute") {
		t.Errorf("rate line of a 9.5 s trace at 2 req/s:\n%s", out)
	}
}
