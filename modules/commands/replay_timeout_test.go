package commands

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// TestReplayRequestTimeout: `llmtap replay --request-timeout-seconds` cancels a replayed
// request still open after the timeout (the mock sees the client go away) and counts it as
// AIPerf does, an error of type TimeoutError with no HTTP code, while a request that ends in
// time is a success.
func TestReplayRequestTimeout(t *testing.T) {
	cfg := fastMock()
	cfg.ITL = 50 * time.Millisecond // 40 tokens: 2 s, far over the timeout; 1 token: at once
	mock, url := testkit.StartMock(t, cfg)
	trace := `{"timestamp": 0, "input_length": 10, "output_length": 40}
{"timestamp": 0, "input_length": 10, "output_length": 40}
{"timestamp": 1, "input_length": 10, "output_length": 1}
`
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(trace), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, out, _ := runReplayArgs(t, "--url", url, "--model", "m", "--extra-inputs", "ignore_eos:true",
		"--request-timeout-seconds", "0.5", "--artifact-dir", dir, path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	canceled, sum, types := timeoutOutcome(t, mock, dir)
	if canceled != 2 || avgOf(sum, "error_request_count") != 2 || avgOf(sum, "request_count") != 1 || !slices.Equal(types, []string{"TimeoutError"}) {
		t.Errorf("mock saw %d cancellations; export: %v errors of types %v, %v successes: want 2, 2, [TimeoutError], 1",
			canceled, avgOf(sum, "error_request_count"), types, avgOf(sum, "request_count"))
	}
	if code, _, _ := runReplayArgs(t, "--url", url, "--model", "m", "--request-timeout-seconds", "0", path); code != 2 {
		t.Errorf("--request-timeout-seconds 0: exit %d, want 2", code)
	}
}

// timeoutOutcome reads what a run with --request-timeout-seconds left: the requests the mock
// saw cancelled, the export's summary and the types of its error_summary; every failed line
// of profile_export.jsonl must be a TimeoutError without a code, as AIPerf counts a timeout.
func timeoutOutcome(t *testing.T, mock *mock.Server, dir string) (canceled int, sum map[string]any, types []string) {
	t.Helper()
	for _, s := range mockSpans(mock) {
		if s.canceled {
			canceled++
		}
	}
	sum = readJSONFile(t, filepath.Join(dir, "profile_export_aiperf.json"))
	errs, _ := sum["error_summary"].([]any)
	for _, e := range errs {
		types = append(types, e.(map[string]any)["error_details"].(map[string]any)["type"].(string))
	}
	for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
		if e, _ := l["error"].(map[string]any); e != nil && (e["type"] != "TimeoutError" || e["code"] != nil) {
			t.Errorf("line error %v: want type TimeoutError, no code", l["error"])
		}
	}
	return canceled, sum, types
}
