package commands

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportComparesAIPerfWithLlmtap: `llmtap report AIPERF_RUN --compare LLMTAP_RUN` puts a
// run AIPerf itself wrote (its example artifacts) beside a llmtap bench run of the same model,
// with a comparison row per figure.
func TestReportComparesAIPerfWithLlmtap(t *testing.T) {
	_, url := startMock(t, fastMock())
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
