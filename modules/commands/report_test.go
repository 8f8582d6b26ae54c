package commands

import (
	"encoding/json"
	"flag"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/internal/testkit"
)

// TestReportCommand runs two real benchmarks against the mock, then `llmtap report` on the
// first artifact folder compared with the second, and checks the HTML and the PNG files.
func TestReportCommand(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "m", "--concurrency", "2", "--request-count", "20",
			"--osl", "8", "--artifact-dir", dir)
		if code != 0 {
			t.Fatalf("bench exited %d: %s", code, out)
		}
		dirs = append(dirs, dir)
	}
	out := t.TempDir()
	html, pngs := filepath.Join(out, "r.html"), filepath.Join(out, "png")
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// Flags go before or after the run.
	code, err := runReport(fs, []string{"-o", html, dirs[0], "--compare", dirs[1], "--png", pngs, "--png-size", "480x240"})
	if code != 0 || err != nil {
		t.Fatalf("report exited %d: %v", code, err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	// Both runs are in the summary: 20 requests each (the folders' names differ).
	for _, d := range dirs {
		if !strings.Contains(string(page), "<td>"+filepath.Base(d)+"</td><td>m</td><td>bench</td><td>2xx</td><td>20</td>") {
			t.Errorf("the summary has no row of 20 bench requests for %s", filepath.Base(d))
		}
	}
	if !strings.Contains(string(page), `<table id="compare">`) {
		t.Error("a comparison has no comparison table")
	}
	files, err := filepath.Glob(filepath.Join(pngs, "*.png"))
	if err != nil || len(files) < 20 {
		t.Fatalf("%d PNG files (%v), want the time charts of both runs and the distributions", len(files), err)
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(r)
		r.Close()
		if err != nil || cfg.Width != 480 || cfg.Height != 240 {
			t.Errorf("%s: %v, %dx%d", f, err, cfg.Width, cfg.Height)
		}
	}
}

func TestReportCommandErrors(t *testing.T) {
	empty := t.TempDir()
	_, url := testkit.StartMock(t, fastMock())
	bench := t.TempDir()
	if code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "m", "--request-count", "2", "--concurrency", "1", "--artifact-dir", bench); code != 0 {
		t.Fatalf("bench exited %d: %s", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no run", nil, 2, "expected one RUN"},
		{"two runs without --compare", []string{empty, empty}, 2, "expected one RUN"},
		{"bad size", []string{empty, "--png-size", "big"}, 2, "WIDTHxHEIGHT"},
		{"tiny size", []string{empty, "--png-size", "10x10"}, 2, "at least"},
		{"folder without records", []string{empty}, 1, "no record file"},
		{"missing folder", []string{filepath.Join(empty, "nope")}, 1, "no such file"},
		{"class the run lacks", []string{bench, "--class", "mirror"}, 1, `no request of class "mirror"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("report", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			code, err := runReport(fs, append(tc.args, "-o", filepath.Join(t.TempDir(), "r.html")))
			if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("exit %d, error %v; want %d and %q", code, err, tc.code, tc.want)
			}
		})
	}
}

// TestReportComparesAIPerfWithLlmtap: `llmtap report AIPERF_RUN --compare LLMTAP_RUN` puts a
// run AIPerf itself wrote (its example artifacts) beside a llmtap bench run of the same model,
// with a comparison row per figure.
func TestReportComparesAIPerfWithLlmtap(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	dir := filepath.Join(t.TempDir(), "llmtap-run")
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "openai/gpt-oss-20b", "--concurrency", "2",
		"--request-count", "12", "--osl", "8", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, out)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	code, err := runReport(fs, []string{aiperfExamples, "--compare", dir, "-o", html})
	if code != 0 || err != nil {
		t.Fatalf("report exited %d: %v", code, err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		// AIPerf's 29 valid requests of the 40 lines kept, and its 11 cancelled ones (code 499).
		"<td>aiperf-run1</td><td>openai/gpt-oss-20b</td><td>bench</td><td>2xx</td><td>29</td>",
		"<td>aiperf-run1</td><td>openai/gpt-oss-20b</td><td>bench</td><td>4xx</td><td>0</td><td>11</td>",
		"<td>llmtap-run</td><td>openai/gpt-oss-20b</td><td>bench</td><td>2xx</td><td>12</td>",
		"<td>openai/gpt-oss-20b</td><td>bench 2xx</td><td>TTFT p50 (ms)</td>",
	} {
		if !strings.Contains(string(page), row) {
			t.Errorf("the report lacks %q", row)
		}
	}
}

// TestReportCompareCountsErrorsAsEachToolDoes: `llmtap report AIPERF_RUN --compare BENCH_RUN`
// shows each run's error count as the tool that ran it counted it in its own summary. The
// bench meets HTTP 500s and streams that fail mid-way after content: the 500s are errors for
// both tools, the partial streams valid requests in the bench's AIPerf-named summary (AIPerf's
// parser skips the error event), so the report must count them as valid too.
func TestReportCompareCountsErrorsAsEachToolDoes(t *testing.T) {
	cfg := fastMock()
	cfg.ErrorRate, cfg.StreamErrorRate, cfg.Seed = 0.2, 0.3, 3
	_, url := testkit.StartMock(t, cfg)
	dir := filepath.Join(t.TempDir(), "llmtap-run")
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "openai/gpt-oss-20b", "--concurrency", "2",
		"--request-count", "40", "--osl", "16", "--extra-inputs", "ignore_eos:true", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, out)
	}
	// The bench's own summary, and how many of its records llmtap itself calls stream errors.
	raw, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]struct{ Avg float64 }
	json.Unmarshal(raw, &sum) // non-metric members do not fit and are dropped
	valid, failed := int(sum["request_count"].Avg), int(sum["error_request_count"].Avg)
	streamErrs := 0
	for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
		if l["error_class"] == "stream_error" {
			streamErrs++
		}
	}
	if failed == 0 || streamErrs == 0 {
		t.Fatalf("bench summary: %d valid, %d errors; %d stream errors: the run must have both kinds", valid, failed, streamErrs)
	}

	html := filepath.Join(t.TempDir(), "r.html")
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if code, err := runReport(fs, []string{aiperfExamples, "--compare", dir, "-o", html}); code != 0 || err != nil {
		t.Fatalf("report exited %d: %v", code, err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	// The report's group rows: run, model, class, status class, requests, errors.
	row := regexp.MustCompile(`<td>(aiperf-run1|llmtap-run)</td><td>[^<]*</td><td>bench</td><td>[0-9x]+</td><td>([0-9]+)</td><td>([0-9]+)</td>`)
	counts := map[string][2]int{}
	for _, m := range row.FindAllStringSubmatch(string(page), -1) {
		ok, _ := strconv.Atoi(m[2])
		bad, _ := strconv.Atoi(m[3])
		c := counts[m[1]]
		counts[m[1]] = [2]int{c[0] + ok, c[1] + bad}
	}
	// AIPerf's example run: the 40 lines kept hold 29 valid requests and its 11 cancelled ones,
	// as AIPerf's error_summary says (11 RequestCancellationError).
	if got := counts["aiperf-run1"]; got != [2]int{29, 11} {
		t.Errorf("AIPerf's run: the report shows %d valid, %d errors; AIPerf counted 29 and 11", got[0], got[1])
	}
	if got := counts["llmtap-run"]; got != [2]int{valid, failed} {
		t.Errorf("the bench: the report shows %d valid, %d errors; the bench's summary %d and %d (%d stream errors with content are valid there)",
			got[0], got[1], valid, failed, streamErrs)
	}
}
