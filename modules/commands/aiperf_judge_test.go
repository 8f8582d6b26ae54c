package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/telemetry/record"
)

// aiperfJudge is testdata/aiperf/judge.py: AIPerf's own export models and CsvExporter, vendored
// from aiperf.Commit, run on a folder of AIPerf-named files.
var aiperfJudge = filepath.Join("..", "..", "testdata", "aiperf", "judge.py")

// judgement is what judge.py reports for one folder.
type judgement struct {
	Lines                int       `json:"lines"`
	Valid                int       `json:"valid"`
	Errors               int       `json:"errors"`
	ErrorsWithDetails    int       `json:"errors_with_details"`
	ErrorsWithoutDetails int       `json:"errors_without_details"`
	ErrorISL             []float64 `json:"error_isl"`
	Conversations        int       `json:"conversations"`
	SummaryValid         *float64  `json:"summary_valid"`
	SummaryErrors        *float64  `json:"summary_errors"`
	ErrorSummaryTotal    int       `json:"error_summary_total"`
	CSVIdentical         *bool     `json:"csv_identical"`
	InputConfig          *bool     `json:"input_config"`
	InputSessions        *int      `json:"input_sessions"`
	InputPayloads        *int      `json:"input_payloads"`
	Problems             []string  `json:"problems"`
}

// judgeAIPerf runs AIPerf's own code on the AIPerf-named files of dir and fails the test on
// every problem it finds. Where the machine has no Python 3 with pydantic 2 it skips, loudly:
// the Go port (aiperf_models_test.go) still runs.
func judgeAIPerf(t *testing.T, dir string) judgement {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("SKIPPED: AIPerf's own models cannot run: no python3 on PATH (install python3 with pydantic 2 to run them)")
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(py, aiperfJudge, dir)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		var why struct{ Unavailable string }
		json.Unmarshal(out.Bytes(), &why)
		t.Skipf("SKIPPED: AIPerf's own models cannot run here: %s (they need Python 3 with pydantic 2)", why.Unavailable)
	}
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("judge.py: %v\n%s%s", err, out.Bytes(), stderr.Bytes())
	}
	var res map[string]judgement
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("judge.py wrote %q: %v\n%s", out.Bytes(), err, stderr.Bytes())
	}
	j := res[dir]
	for _, p := range j.Problems {
		t.Errorf("AIPerf's code on %s: %s", filepath.Base(dir), p)
	}
	return j
}

// TestAIPerfRecordsPassAIPerf feeds aiperf.Records (the demo's AIPerf export) records
// of every kind AIPerf and llmtap count differently, writes the exports and has AIPerf's own
// code judge them: the counts follow AIPerf's rules (a 204 and a no-content 200 are errors, a
// stream with content before its error event is valid), and the failed requests' prompt sizes
// are error_isl and total_error_isl, rows AIPerf's CsvExporter writes the same.
func TestAIPerfRecordsPassAIPerf(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(v float64) *float64 { return &v }
	rec := func(i, status int, errClass string, content int, isl int64) *record.Record {
		r := &record.Record{RequestID: fmt.Sprint("r", i), Class: record.ClassBench, Model: "m", Start: start.Add(time.Duration(i) * time.Millisecond),
			Status: status, Error: errClass, Stream: true, DurationMs: 50, UsageOutputTokens: -1,
			InputTokens: isl, InputTokensSource: record.SourceTokenizer}
		if content > 0 {
			r.ContentEvents, r.OutputTokens, r.OutputTokensSource = content, int64(content), record.SourceTokenizer
			r.TTFTMs, r.RequestLatencyMs, r.ITLMs = ms(10+float64(i)), ms(40+float64(i)), ms(1.5)
		}
		return r
	}
	a := aiperf.NewRecords(record.ClassBench, nil)
	for _, r := range []*record.Record{
		rec(0, 200, "", 8, 100), rec(1, 200, "", 8, 110), rec(2, 200, "", 8, 120),
		rec(3, 500, record.ErrHTTP, 0, 130),   // an error for both
		rec(4, 204, "", 0, 140),               // an error for AIPerf only
		rec(5, 200, record.ErrStream, 5, 150), // valid for AIPerf only
		rec(6, 200, "", 0, 160),               // no content: AIPerf's error without details
		rec(7, 200, record.ErrUpstream, 3, 0), // reset: an error, prompt not counted
		{RequestID: "other", Class: record.ClassLive, Start: start, Status: 500, Error: record.ErrHTTP}, // another class
	} {
		a.Consume(r)
	}
	dir := t.TempDir()
	var info aiperf.RunInfo
	info.Input.Endpoint.ModelNames = []string{"m"}
	if _, err := aiperf.WriteExports(dir, a.Export(info, start, start.Add(time.Second), false)); err != nil {
		t.Fatal(err)
	}
	var sum map[string]struct {
		Avg   float64
		Count int
	}
	b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &sum)
	if sum["request_count"].Avg != 4 || sum["error_request_count"].Avg != 4 || sum["error_isl"].Count != 3 || sum["total_error_isl"].Avg != 130+140+160 {
		t.Errorf("request_count %v, error_request_count %v, error_isl count %d, total_error_isl %v; want 4, 4, 3, 430",
			sum["request_count"].Avg, sum["error_request_count"].Avg, sum["error_isl"].Count, sum["total_error_isl"].Avg)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.csv"))
	if !bytes.Contains(csv, []byte("Total Error Input Sequence Length (tokens),430.00\r\n")) {
		t.Errorf("the CSV has no total_error_isl row:\n%s", csv)
	}
	t.Run("AIPerf's own code", func(t *testing.T) {
		if j := judgeAIPerf(t, dir); j.CSVIdentical == nil || !*j.CSVIdentical {
			t.Errorf("CSV identical %v", j.CSVIdentical)
		}
	})
}
