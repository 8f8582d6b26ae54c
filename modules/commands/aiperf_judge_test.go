package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// aiperfJudge is testdata/aiperf/judge.py: AIPerf's own export models and CsvExporter, vendored
// from loadtest.AIPerfCommit, run on a folder of AIPerf-named files.
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
