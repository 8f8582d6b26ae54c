package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// arrived lists what the mock received as "n:prompt_tokens" (n from the request id's end),
// sorted: the workload as the server saw it.
func arrived(t *testing.T, m *mock.Server) []string {
	t.Helper()
	var out []string
	for _, tr := range m.Traces() {
		n := tr.RequestID[strings.LastIndexByte(tr.RequestID, '-')+1:]
		out = append(out, n+":"+strconv.Itoa(tr.PromptTokens))
	}
	slices.Sort(out)
	return out
}

// TestBenchWorkersSplitAndMerge splits one benchmark across three workers (in-process, the
// flags a Kubernetes Indexed Job passes) against one mock, and checks:
//   - what arrived at the mock from the three is exactly what one process sends (each request
//     number once, with the same prompt), and nothing arrived before the shared start time;
//   - each worker labels its lines with its worker_id and sends only its own numbers;
//   - `llmtap report --merge` writes one export that AIPerf's models accept, whose counts add
//     up, and whose every percentile equals the pooled records' (HdrHistogram merge, not
//     averaged percentiles).
func TestBenchWorkersSplitAndMerge(t *testing.T) {
	cfg := fastMock()
	cfg.ErrorRate = 0.15
	base := []string{"--model", "mock-model", "--concurrency", "4", "--request-count", "45", "--isl", "40",
		"--isl-stddev", "15", "--osl", "6", "--extra-inputs", "ignore_eos:true"}

	single, url1 := testkit.StartMock(t, cfg)
	if code, out, _, _ := runBenchArgs(t, append(base, "--url", url1, "--artifact-dir", t.TempDir())...); code != 0 {
		t.Fatalf("single run: exit %d\n%s", code, out)
	}
	want := arrived(t, single)
	if len(want) != 45 {
		t.Fatalf("the single run sent %d requests, want 45", len(want))
	}

	mock, url := testkit.StartMock(t, cfg)
	start := time.Now().Add(time.Second)
	root := t.TempDir()
	dirs := make([]string, 3)
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range dirs {
		dirs[i] = filepath.Join(root, "worker"+strconv.Itoa(i))
		wg.Go(func() {
			codes[i], _, _, _ = runBenchArgs(t, append(base, "--url", url, "--artifact-dir", dirs[i],
				"--worker-index", strconv.Itoa(i), "--worker-count", "3", "--start-at", start.Format(time.RFC3339Nano))...)
		})
	}
	wg.Wait()
	if !slices.Equal(codes, []int{0, 0, 0}) {
		t.Fatalf("worker exit codes %v", codes)
	}
	if got := arrived(t, mock); !slices.Equal(got, want) {
		t.Errorf("the three workers' requests at the mock:\n%v\nwant the single run's:\n%v", got, want)
	}
	for _, at := range mock.Arrivals() {
		if at.Before(start) {
			t.Errorf("a request arrived at %v, before the shared start %v", at, start)
		}
	}
	failed := 0
	for _, tr := range mock.Traces() {
		if tr.Status >= 400 {
			failed++
		}
	}
	for i, d := range dirs {
		for _, l := range readLines(t, filepath.Join(d, "profile_export.jsonl")) {
			meta := l["metadata"].(map[string]any)
			if meta["worker_id"] != "llmtap-"+strconv.Itoa(i) || int(l["n"].(float64))%3 != i {
				t.Errorf("worker %d wrote request %v as worker %v", i, l["n"], meta["worker_id"])
			}
		}
	}

	out := filepath.Join(root, "merged")
	var console bytes.Buffer
	if code, err := reportMerge(&console, dirs, out); code != 0 {
		t.Fatalf("report --merge: exit %d: %v", code, err)
	}
	if n, err := checkJSONL(filepath.Join(out, "profile_export.jsonl"), recordInfo(recordMetadata)); err != nil || n != 45 {
		t.Errorf("merged profile_export.jsonl: %d lines: %v", n, err)
	}
	sum, err := checkSummary(filepath.Join(out, "profile_export_aiperf.json"), jsonExportData)
	if err != nil {
		t.Errorf("merged profile_export_aiperf.json: %v", err)
	}
	csvb, err := os.ReadFile(filepath.Join(out, "profile_export_aiperf.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkCSV(csvb, aiperfStatKeys); err != nil {
		t.Errorf("merged CSV: %v", err)
	}
	t.Run("AIPerf's own code", func(t *testing.T) {
		if j := judgeAIPerf(t, out); j.Lines != 45 || j.Errors != failed || j.CSVIdentical == nil || !*j.CSVIdentical {
			t.Errorf("judged %d lines, %d errors, CSV identical %v; want 45 lines, %d errors, AIPerf's CSV", j.Lines, j.Errors, j.CSVIdentical, failed)
		}
	})
	count := func(tag string) string { return fmt.Sprint(sum[tag].(map[string]any)["avg"]) }
	if count("request_count") != strconv.Itoa(45-failed) || count("error_request_count") != strconv.Itoa(failed) {
		t.Errorf("merged counts %s ok, %s failed; the mock answered %d ok, %d failed",
			count("request_count"), count("error_request_count"), 45-failed, failed)
	}

	// The pooled records: every worker's lines read back by llmtap report's loader, into one
	// aggregator.
	agg := stats.New(stats.Options{})
	for _, d := range dirs {
		run, err := report.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range run.Records {
			agg.Add(r)
		}
	}
	pooled := stats.Combine(aiperf.ClassGroups(agg.Summary(), "bench"), false)
	var merged map[string]json.RawMessage
	b, _ := os.ReadFile(filepath.Join(out, "profile_export_aiperf.json"))
	if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	if len(pooled.Metrics) < 10 {
		t.Fatalf("pooled records have %d metrics", len(pooled.Metrics))
	}
	for tag, p := range pooled.Metrics {
		var m stats.Stat
		if err := json.Unmarshal(merged[tag], &m); err != nil {
			t.Errorf("%s: %v", tag, err)
			continue
		}
		pp := [...]float64{p.Min, p.Max, p.P1, p.P5, p.P10, p.P25, p.P50, p.P75, p.P90, p.P95, p.P99}
		mp := [...]float64{m.Min, m.Max, m.P1, m.P5, m.P10, m.P25, m.P50, m.P75, m.P90, m.P95, m.P99}
		if m.Count != p.Count || mp != pp {
			t.Errorf("%s merged: count %d %v\npooled: count %d %v", tag, m.Count, mp, p.Count, pp)
		}
		if math.Abs(m.Avg-p.Avg) > 1e-9*math.Abs(p.Avg) {
			t.Errorf("%s: merged avg %v, pooled %v", tag, m.Avg, p.Avg)
		}
	}
	if !strings.Contains(console.String(), "merged 3 worker exports") {
		t.Errorf("console:\n%s", console.String())
	}
}

// TestReplayWorkersKeepSessions splits a trace with sessions across three workers: every
// request is sent by exactly one worker, and all turns of a session by the same one.
func TestReplayWorkersKeepSessions(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	var trace strings.Builder
	for i := range 24 {
		fmt.Fprintf(&trace, `{"timestamp": %d, "input_length": 30, "output_length": 4, "session_id": "s%d", "delay": 1}`+"\n", i*3, i%7)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(trace.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := map[string]int{}
	var sent []int
	for i := range 3 {
		dir := t.TempDir()
		code, out, _ := runReplayArgs(t, "--url", url, "--model", "m", "--speedup", "10", "--artifact-dir", dir,
			"--worker-index", strconv.Itoa(i), "--worker-count", "3", path)
		if code != 0 {
			t.Fatalf("worker %d: exit %d\n%s", i, code, out)
		}
		for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
			sid := l["session_id"].(string)
			if w, ok := owner[sid]; ok && w != i {
				t.Errorf("session %s on workers %d and %d", sid, w, i)
			}
			owner[sid] = i
			sent = append(sent, int(l["n"].(float64)))
		}
	}
	slices.Sort(sent)
	all := make([]int, 24)
	for i := range all {
		all[i] = i
	}
	if !slices.Equal(sent, all) {
		t.Errorf("requests sent by the workers: %v, want 0…23 once each", sent)
	}
	if len(owner) != 7 {
		t.Errorf("%d sessions, want 7", len(owner))
	}
}

// TestWorkerFlagErrors: an index outside the count, and a malformed start time, are refused.
func TestWorkerFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--worker-index", "3", "--worker-count", "3"},
		{"--worker-count", "0"},
		{"--start-at", "soon"},
		{"--worker-index", "4", "--worker-count", "5", "--concurrency", "2"},
	} {
		code, _, _, _ := runBenchArgs(t, append([]string{"--model", "m", "--concurrency", "2", "--url", "http://127.0.0.1:9"}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
