package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/mocktest"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
)

// startMock serves the built-in mock on a loopback port for the test's lifetime.
func startMock(t *testing.T) (*mock.Server, string) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, 500*time.Microsecond
	cfg.LogEvents = true
	return mocktest.Start(t, cfg)
}

// chatBody is a streamed chat request whose prompt says n, asking for osl tokens.
func chatBody(n, osl int) []byte {
	return []byte(`{"model":"mock-model","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":` +
		strconv.Itoa(osl) + `,"messages":[{"role":"user","content":"request ` + strconv.Itoa(n) + `"}]}`)
}

func exportLines(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestRunClosedLoop runs the library directly, without the CLI: a closed loop of 24 requests
// against the mock on loopback. The mock saw each request once, the records are measured
// (streamed, with the output length asked for), and the three exports are written.
func TestRunClosedLoop(t *testing.T) {
	mock, url := startMock(t)
	dir := t.TempDir()
	res, err := Run(context.Background(), Spec{
		Class: record.ClassBench, Label: "bench", BaseURL: url, Dir: dir,
		Schedule: gen.Config{Concurrency: 3, MaxRequests: 24, MaxInFlight: -1},
		Build: func(n int) (Request, error) {
			return Request{Path: "/v1/chat/completions", Body: chatBody(n, 8)}, nil
		},
		Keep: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mock.Stats().Requests; got != 24 {
		t.Errorf("the mock saw %d requests, want 24", got)
	}
	if res.Counters.Completed != 24 || res.Lines != 24 || len(res.Sent) != 24 {
		t.Errorf("completed %d, lines %d, sent %d; want 24 each", res.Counters.Completed, res.Lines, len(res.Sent))
	}
	seen := map[string]bool{}
	for _, tr := range mock.Traces() {
		seen[tr.RequestID] = true
	}
	for _, l := range exportLines(t, dir) {
		id := l["request_id"].(string)
		if !seen[id] || l["class"] != "bench" || l["output_tokens"].(float64) != 8 || l["stream"] != true {
			t.Errorf("line %v: want a streamed bench request of 8 tokens the mock saw", l)
		}
	}
	if st := res.Export.Group.Metrics["time_to_first_token"]; st.Count != 24 || st.Min < 2 {
		t.Errorf("TTFT %+v: want 24 values of at least the mock's 2 ms", st)
	}
	if len(res.Files) != 5 { // the JSON and CSV summaries, the lines, the snapshot, inputs.json
		t.Errorf("files %v", res.Files)
	}
	for _, f := range res.Files {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

// TestRunSessionTurnsFollowResponses runs two sessions of three turns through Next: each turn
// is sent only after the previous turn's response ended (a causal bound, not a timing one),
// and carries its session as X-Correlation-Id.
func TestRunSessionTurnsFollowResponses(t *testing.T) {
	_, url := startMock(t)
	heads := []int{0, 3}
	res, err := Run(context.Background(), Spec{
		Class: record.ClassReplay, Label: "replay", BaseURL: url, Dir: t.TempDir(), Keep: true,
		Schedule: gen.Config{Concurrency: 2, MaxRequests: 2, MaxInFlight: -1},
		Build: func(n int) (Request, error) {
			return Request{Path: "/v1/chat/completions", Body: chatBody(n, 4), Session: "s" + strconv.Itoa(n/3)}, nil
		},
		MapN: func(n int) int { return heads[n] },
		Next: func(n int) (int, time.Duration, bool) { return n + 1, time.Millisecond, n%3 != 2 },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sent) != 6 {
		t.Fatalf("%d requests sent, want 6", len(res.Sent))
	}
	byN := map[int]SentRequest{}
	for _, s := range res.Sent {
		byN[s.N] = s
		if want := "s" + strconv.Itoa(s.N/3); s.Session != want {
			t.Errorf("request %d in session %q, want %q", s.N, s.Session, want)
		}
	}
	for n := range 6 {
		if n%3 == 0 {
			continue
		}
		if byN[n].Start < byN[n-1].Done {
			t.Errorf("turn %d started at %v, before turn %d's response ended at %v", n, byN[n].Start, n-1, byN[n-1].Done)
		}
	}
}

// TestRunRefusesNoBuild: a Spec without requests is an error, and nothing is written.
func TestRunRefusesNoBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Run(context.Background(), Spec{Dir: dir}); err == nil || !strings.Contains(err.Error(), "Build") {
		t.Errorf("error %v, want one naming Build", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the artifact folder was created")
	}
}
