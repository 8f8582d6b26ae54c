package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/mock"
)

func fastMock() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, 500*time.Microsecond
	cfg.LogEvents = true
	return cfg
}

// runBenchArgs runs `llmtap bench` in-process and returns its exit code, stdout and result.
func runBenchArgs(t *testing.T, args ...string) (int, string, *bench.Result, *bench.Spec) {
	t.Helper()
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	var res *bench.Result
	var spec *bench.Spec
	code, err := benchMain(context.Background(), &out, &errOut, false, fs, args, func(s *bench.Spec, r *bench.Result) {
		s.Keep = true
		spec, res = s, r
	})
	if err != nil {
		t.Logf("bench error: %v\nstderr: %s", err, errOut.String())
	}
	return code, out.String(), res, spec
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestBenchClosedLoop runs a closed-loop benchmark with warmup and goodput against the mock:
// the request count is honoured, the warmup requests reach the server but not the results,
// every output file is written privately and parses, and the input lengths are exact.
func TestBenchClosedLoop(t *testing.T) {
	mock, url := testkit.StartMock(t, fastMock())
	dir := t.TempDir()
	code, out, res, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "4",
		"--request-count", "40", "--warmup-request-count", "6", "--isl", "120", "--osl", "16",
		"--extra-inputs", "ignore_eos:true", "--goodput", "request_latency:60000 time_to_first_token:0.000001",
		"--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := mock.Stats().Requests; got != 46 {
		t.Errorf("the mock saw %d requests, want 40 + 6 warmup", got)
	}
	lines := readLines(t, filepath.Join(dir, "profile_export.jsonl"))
	if len(lines) != 40 {
		t.Fatalf("%d export lines, want 40", len(lines))
	}
	for _, l := range lines {
		if l["class"] != "bench" || l["error"] != nil || l["error_class"] != "" || l["input_tokens"].(float64) != 120 || l["output_tokens"].(float64) != 16 {
			t.Fatalf("unexpected line %v", l)
		}
		if strings.HasPrefix(l["request_id"].(string), "warmup") {
			t.Fatal("a warmup request is in the results")
		}
		if l["metadata"].(map[string]any)["benchmark_phase"] != "profiling" || l["effective_latency_ms"].(float64) <= 0 {
			t.Fatalf("missing bench fields: %v", l)
		}
	}
	for _, name := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "profile_export_aiperf.csv"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	var summary map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatal(err)
	}
	if c := summary["request_count"].(map[string]any)["avg"].(float64); c != 40 {
		t.Errorf("request_count %v, want 40", c)
	}
	// A TTFT objective of 1 ns cannot be met (a loopback round trip alone takes microseconds), so goodput is zero: the SLOs were applied.
	if g := summary["good_request_count"].(map[string]any)["avg"].(float64); g != 0 {
		t.Errorf("good_request_count %v, want 0", g)
	}
	if _, ok := summary["generator"].(map[string]any)["schedule_lag"]; !ok {
		t.Error("no generator self-check in the JSON export")
	}
	csvb, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.csv"))
	if !bytes.HasPrefix(csvb, []byte("Metric,avg,min,max,p1,")) || !bytes.Contains(csvb, []byte("\r\nRequest Count,40.00\r\n")) {
		t.Errorf("CSV export:\n%s", csvb)
	}
	for _, want := range []string{"Time to First Token (ms)", "Load generator self-check", "JSON Export:"} {
		if !strings.Contains(out, want) {
			t.Errorf("console output lacks %q:\n%s", want, out)
		}
	}
	if res.Generator.Sent != 40 {
		t.Errorf("generator sent %d", res.Generator.Sent)
	}
}

// TestBenchGoodputAll checks the other side of goodput: generous objectives count every
// request as good.
func TestBenchGoodputAll(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	dir := t.TempDir()
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "m", "--concurrency", "2", "--request-count", "10",
		"--isl", "20", "--osl", "4", "--goodput", "request_latency:60000", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var summary map[string]map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	json.Unmarshal(b, &summary)
	if g := summary["good_request_count"]["avg"]; g != 10.0 {
		t.Errorf("good_request_count %v, want 10", g)
	}
}

// TestBenchOpenLoopCeilingAndCancel runs a rate with a concurrency ceiling and cancels a share of
// requests: the cancelled ones are reported as such, and the queueing under the ceiling shows
// as effective latency above request latency.
func TestBenchOpenLoopCeilingAndCancel(t *testing.T) {
	cfg := fastMock()
	cfg.ITL = 2 * time.Millisecond
	_, url := testkit.StartMock(t, cfg)
	dir := t.TempDir()
	code, out, res, _ := runBenchArgs(t, "--url", url, "--model", "m", "--request-rate", "400", "--arrival-pattern", "constant",
		"--concurrency", "2", "--request-count", "30", "--isl", "10", "--osl", "20",
		"--request-cancellation-rate", "30", "--request-cancellation-delay", "0.01", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lines := readLines(t, filepath.Join(dir, "profile_export.jsonl"))
	if len(lines) != 30 {
		t.Fatalf("%d lines, want 30", len(lines))
	}
	cancelled, waited := 0, 0
	for _, l := range lines {
		if l["was_cancelled"] == true {
			cancelled++
			if e, _ := l["error"].(map[string]any); l["error_class"] != "client_canceled" || e["code"] != 499.0 || e["type"] != "client_canceled" {
				t.Errorf("cancelled request with error %v", l["error"])
			}
		}
		if l["queue_wait_ms"].(float64) > 0 {
			waited++
		}
	}
	// 30% of 30 with a seeded draw; the exact number is fixed by the seed but not worth pinning.
	if cancelled == 0 || cancelled == 30 {
		t.Errorf("%d of 30 requests cancelled, want some", cancelled)
	}
	// Requests of 40 ms each at 400/s through 2 slots must queue.
	if waited == 0 {
		t.Error("no request waited for a slot under the concurrency ceiling")
	}
	if res.Generator.Cancelled != int64(cancelled) {
		t.Errorf("generator counted %d cancelled, lines %d", res.Generator.Cancelled, cancelled)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no model", []string{"--concurrency", "1"}},
		{"concurrency 0 without a rate", []string{"--model", "m", "--concurrency", "0"}},
		{"bad arrival pattern", []string{"--model", "m", "--request-rate", "5", "--arrival-pattern", "weird"}},
		{"bad goodput", []string{"--model", "m", "--concurrency", "1", "--goodput", "ttft:5"}},
		{"bad extra input", []string{"--model", "m", "--concurrency", "1", "--extra-inputs", "novalue"}},
		{"bad endpoint type", []string{"--model", "m", "--concurrency", "1", "--endpoint-type", "grpc"}},
		{"bad cancellation rate", []string{"--model", "m", "--concurrency", "1", "--request-cancellation-rate", "150"}},
		{"a url without a host (workload.HTTPURL, the shadow config's check)", []string{"--model", "m", "--concurrency", "1", "--request-count", "1", "--url", "http://"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			code, err := benchMain(context.Background(), io.Discard, io.Discard, false, fs, tt.args, nil)
			if code != 2 || err == nil {
				t.Fatalf("exit %d, error %v; want 2 and an error", code, err)
			}
		})
	}
}

// TestBenchDefaultConcurrency: without --concurrency or --request-rate bench runs one
// request in flight, AIPerf's default (issue 34: it refused to run), and says so in its folder
// name and input_config.
func TestBenchDefaultConcurrency(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	out := t.TempDir()
	t.Chdir(out)
	code, stdout, res, spec := runBenchArgs(t, "--url", url, "--model", "mock-model", "--request-count", "5", "--osl", "4")
	if code != 0 || res == nil {
		t.Fatalf("exit %d without a concurrency or rate\n%s", code, stdout)
	}
	if spec.Schedule.Concurrency != 1 || spec.Schedule.Arrivals != nil {
		t.Errorf("spec concurrency %d, arrivals %v; want a closed loop of 1", spec.Schedule.Concurrency, spec.Schedule.Arrivals)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "artifacts", "*-concurrency1"))
	if len(dirs) != 1 {
		entries, _ := os.ReadDir(filepath.Join(out, "artifacts"))
		t.Fatalf("artifact folders %v, want one named …-concurrency1", entries)
	}
	cfg, err := os.ReadFile(filepath.Join(dirs[0], "profile_export_aiperf.json"))
	if err != nil || !regexp.MustCompile(`"concurrency":\s*1\b`).Match(cfg) {
		t.Errorf("profile_export_aiperf.json's input_config does not say concurrency 1 (%v)", err)
	}
}

// TestBenchTokenizer runs bench with --tokenizer against a server that reports no usage: the
// prompts are sized in the tokenizer file's tokens (exactly --isl of them, where a prompt of 50
// o200k_base tokens takes many more of this 512-token vocabulary's), the counts in the records
// are the file's and name it; a file that does not load is refused before anything is sent.
func TestBenchTokenizer(t *testing.T) {
	file := filepath.Join("..", "..", "telemetry", "tokens", "hf", "testdata", "stories260k-legacy.json")
	cfg := fastMock()
	cfg.Usage = mock.UsageNever
	mock, url := testkit.StartMock(t, cfg)
	dir := t.TempDir()
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "2",
		"--request-count", "4", "--isl", "50", "--osl", "8", "--tokenizer", file, "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
		if l["tokenizer"] != "hf:stories260k-legacy" || l["input_tokens_source"] != "tokenizer" {
			t.Fatalf("line counted by %v (%v), want hf:stories260k-legacy", l["tokenizer"], l["input_tokens_source"])
		}
		if in := l["input_tokens"].(float64); in != 50 {
			t.Errorf("input_tokens %v: the prompt was not sized to --isl 50 in the tokenizer file's tokens", in)
		}
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	code, err := benchMain(context.Background(), io.Discard, io.Discard, false, fs,
		[]string{"--url", url, "--model", "m", "--concurrency", "1", "--request-count", "1", "--tokenizer", filepath.Join(dir, "missing.json")}, nil)
	if code != 2 || err == nil || !strings.Contains(err.Error(), "--tokenizer") {
		t.Fatalf("a missing tokenizer file: exit %d, error %v; want 2 and an error naming --tokenizer", code, err)
	}
	if got := mock.Stats().Requests; got != 4 {
		t.Errorf("the mock saw %d requests, want 4 (none for the refused run)", got)
	}
}
