package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// runBenchPlain runs `llmtap bench` in-process with no hook (sweeps run a bench per cell) and
// returns its exit code and stderr.
func runBenchPlain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	code, err := benchMain(context.Background(), &out, &errOut, false, fs, args, nil)
	if err != nil {
		t.Logf("bench error: %v", err)
	}
	return code, errOut.String()
}

// span is one request as the mock saw it: from its arrival to its last write.
type span struct {
	id         string
	start, end time.Time
	canceled   bool
}

// mockSpans returns the mock's traces as spans, oldest first.
func mockSpans(m *mock.Server) []span {
	var out []span
	for _, tr := range m.Traces() {
		s := span{id: tr.RequestID, start: tr.Arrived, end: tr.Arrived, canceled: tr.Canceled}
		for _, e := range tr.Events {
			if e.At.After(s.end) {
				s.end = e.At
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b span) int { return a.start.Compare(b.start) })
	return out
}

// maxInFlight is the most requests the mock was answering at once, at the arrivals of the
// spans that keep says, among those spans: a request counts from its arrival to its last
// write, so a closed loop's next request (sent once the last byte was read) never overlaps
// the one before it.
func maxInFlight(spans []span, keep func(span) bool) int {
	best := 0
	for _, s := range spans {
		if !keep(s) {
			continue
		}
		n := 0
		for _, o := range spans {
			if keep(o) && !o.start.After(s.start) && o.end.After(s.start) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// lineIDs returns the x_request_id of every line of a run's profile_export.jsonl.
func lineIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
		ids[l["metadata"].(map[string]any)["x_request_id"].(string)] = true
	}
	return ids
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// avgOf returns member tag's avg in a summary (0 when absent).
func avgOf(m map[string]any, tag string) float64 {
	v, _ := m[tag].(map[string]any)
	f, _ := v["avg"].(float64)
	return f
}

// TestBenchConcurrencyRampInFlightRises: with --concurrency-ramp-duration the mock sees one
// request at a time in the first slot's interval and the full concurrency at the end, in a
// closed loop and under a rate with a concurrency ceiling (slots open in the slot queue).
func TestBenchConcurrencyRampInFlightRises(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"closed loop", nil},
		{"rate with ceiling", []string{"--request-rate", "100", "--arrival-pattern", "constant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastMock()
			cfg.TTFT = 40 * time.Millisecond
			mock, url := testkit.StartMock(t, cfg)
			code, out := runBenchPlain(t, append([]string{"--url", url, "--model", "m", "--isl", "10", "--osl", "4",
				"--concurrency", "6", "--concurrency-ramp-duration", "1.5", "--benchmark-duration", "2.5",
				"--artifact-dir", t.TempDir()}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			spans := mockSpans(mock)
			if len(spans) == 0 {
				t.Fatal("the mock saw no request")
			}
			t0 := spans[0].start
			// Slot 1 opens at 0.3 s, the last (slot 5) at 1.5 s; a request takes about 45 ms, so
			// the first three (counted, not timed: a slow first connection cannot move them into
			// the next slot's time) go one at a time.
			early := maxInFlight(spans, func(s span) bool { return !s.start.After(spans[min(2, len(spans)-1)].start) })
			late := maxInFlight(spans, func(s span) bool { return s.start.Sub(t0) > 1700*time.Millisecond })
			t.Logf("most in flight at the mock: %d among the first 3 requests, %d after 1.7 s", early, late)
			if early != 1 || late < 5 || late > 6 {
				t.Errorf("in flight %d early, %d late: want 1, then about 6", early, late)
			}
		})
	}
}

// TestBenchConcurrencySweep runs --concurrency 1,3 and checks each level's folder, label and
// seed, and the ceiling the mock saw for each level's requests.
func TestBenchConcurrencySweep(t *testing.T) {
	cfg := fastMock()
	cfg.TTFT = 20 * time.Millisecond
	mock, url := testkit.StartMock(t, cfg)
	base := t.TempDir()
	code, out := runBenchPlain(t, "--url", url, "--model", "m", "--isl", "10", "--osl", "4",
		"--concurrency", "1,3", "--request-count", "12", "--random-seed", "7", "--artifact-dir", base)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	spans := mockSpans(mock)
	for i, level := range []int{1, 3} {
		dir := filepath.Join(base, "concurrency_"+[]string{"1", "3"}[i])
		sum := readJSONFile(t, filepath.Join(dir, "profile_export_aiperf.json"))
		lg := sum["input_config"].(map[string]any)["loadgen"].(map[string]any)
		if lg["concurrency"] != float64(level) {
			t.Errorf("%s: input_config.loadgen.concurrency %v, want %d", dir, lg["concurrency"], level)
		}
		if seed := sum["run_info"].(map[string]any)["seed"]; seed != float64(7+i) {
			t.Errorf("%s: seed %v, want %d (AIPerf: base seed + value index)", dir, seed, 7+i)
		}
		ids := lineIDs(t, dir)
		got := maxInFlight(spans, func(s span) bool { return ids[s.id] })
		t.Logf("concurrency %d: %d requests, at most %d in flight at the mock", level, len(ids), got)
		if len(ids) != 12 || got > level || got < min(level, 2) {
			t.Errorf("concurrency %d: %d requests, %d in flight at the mock", level, len(ids), got)
		}
	}
	sw := readJSONFile(t, filepath.Join(base, "sweep_aggregate", aiperf.SweepJSON))
	per, _ := sw["per_combination_metrics"].([]any)
	bt, _ := sw["best_configurations"].(map[string]any)["best_throughput"].(map[string]any)
	if len(per) != 2 || sw["num_profile_runs"] != 2.0 || bt["parameters"].(map[string]any)["concurrency"] != 3.0 {
		t.Errorf("sweep aggregate: %d values, %v runs, best throughput %v: want 2, 2, at concurrency 3", len(per), sw["num_profile_runs"], bt)
	}
	for _, bad := range []string{"1,1", "0,2", "2,x"} {
		if code, _ := runBenchPlain(t, "--url", url, "--model", "m", "--concurrency", bad); code != 2 {
			t.Errorf("--concurrency %s: exit %d, want 2", bad, code)
		}
	}
}

// TestBenchRequestTimeout: a request over --request-timeout-seconds is cancelled (the mock sees
// the client go away) and counted as AIPerf counts it: an error of type TimeoutError.
func TestBenchRequestTimeout(t *testing.T) {
	cfg := fastMock()
	cfg.ITL = 50 * time.Millisecond // 40 tokens: 2 s, far over the timeout
	mock, url := testkit.StartMock(t, cfg)
	dir := t.TempDir()
	code, out := runBenchPlain(t, "--url", url, "--model", "m", "--isl", "10", "--osl", "40",
		"--extra-inputs", "ignore_eos:true", "--concurrency", "2", "--request-count", "4",
		"--request-timeout-seconds", "0.3", "--artifact-dir", dir)
	if code != 1 { // no request completed
		t.Fatalf("exit %d, want 1 (every request timed out)\n%s", code, out)
	}
	canceled, sum, types := timeoutOutcome(t, mock, dir)
	if canceled != 4 || avgOf(sum, "error_request_count") != 4 || !slices.Equal(types, []string{"TimeoutError"}) {
		t.Errorf("mock saw %d cancellations, export counts %v errors of types %v: want 4, 4, [TimeoutError]",
			canceled, avgOf(sum, "error_request_count"), types)
	}
}

// TestBenchWarmupDuration: --warmup-duration sends a warmup (at --warmup-concurrency) before
// the profiling phase and leaves it out of the results.
func TestBenchWarmupDuration(t *testing.T) {
	cfg := fastMock()
	cfg.TTFT = 10 * time.Millisecond
	mock, url := testkit.StartMock(t, cfg)
	dir := t.TempDir()
	code, out := runBenchPlain(t, "--url", url, "--model", "m", "--isl", "10", "--osl", "2",
		"--concurrency", "3", "--request-count", "6", "--warmup-duration", "0.4", "--warmup-concurrency", "1",
		"--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	spans := mockSpans(mock)
	isWarmup := func(s span) bool { return strings.HasPrefix(s.id, "warmup-") }
	warm, last := 0, time.Time{}
	for _, s := range spans {
		if isWarmup(s) {
			warm++
			last = s.start
		}
	}
	ids := lineIDs(t, dir)
	t.Logf("%d warmup requests, %d profiled", warm, len(ids))
	if warm < 3 || len(ids) != 6 || maxInFlight(spans, isWarmup) != 1 {
		t.Errorf("%d warmup requests (at most %d in flight), %d profiled: want several at 1, then 6",
			warm, maxInFlight(spans, isWarmup), len(ids))
	}
	for _, s := range spans {
		if ids[s.id] && s.start.Before(last) {
			t.Errorf("profiled request %s arrived before the last warmup request", s.id)
		}
	}
}

// TestBenchProfileRunsAggregate: --num-profile-runs 3 runs the benchmark three times into
// profile_runs/run_000N and writes the aggregate with AIPerf's confidence statistics, computed
// from the runs' own summaries; only the first run sends the warmup.
func TestBenchProfileRunsAggregate(t *testing.T) {
	mock, url := testkit.StartMock(t, fastMock())
	base := t.TempDir()
	code, out := runBenchPlain(t, "--url", url, "--model", "m", "--isl", "10", "--osl", "4",
		"--concurrency", "2", "--request-count", "6", "--warmup-request-count", "2",
		"--num-profile-runs", "3", "--confidence-level", "0.9", "--artifact-dir", base)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if n := len(mock.Arrivals()); n != 2+3*6 {
		t.Errorf("the mock saw %d requests, want 20 (one warmup of 2, three runs of 6)", n)
	}
	var ttft []float64
	for _, r := range []string{"run_0001", "run_0002", "run_0003"} {
		sum := readJSONFile(t, filepath.Join(base, "profile_runs", r, "profile_export_aiperf.json"))
		ttft = append(ttft, avgOf(sum, "time_to_first_token"))
	}
	agg := readJSONFile(t, filepath.Join(base, "aggregate", aiperf.AggregateJSON))
	meta := agg["metadata"].(map[string]any)
	if meta["num_profile_runs"] != 3.0 || meta["num_successful_runs"] != 3.0 || meta["confidence_level"] != 0.9 {
		t.Errorf("metadata %v", meta)
	}
	m := agg["metrics"].(map[string]any)
	got := m["time_to_first_token_avg"].(map[string]any)
	want := aiperf.NewConfidence(ttft, 0.9, "ms")
	for k, w := range map[string]float64{"mean": want.Mean, "ci_low": want.CILow, "ci_high": want.CIHigh, "t_critical": want.TCritical} {
		if g, _ := got[k].(float64); math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("time_to_first_token_avg %s = %v, want %v from the runs' summaries", k, g, w)
		}
	}
	if rc := m["request_count_avg"].(map[string]any); rc["mean"] != 6.0 || rc["std"] != 0.0 {
		t.Errorf("request_count_avg %v: want mean 6, std 0", rc)
	}
	if _, err := os.Stat(filepath.Join(base, "aggregate", aiperf.AggregateCSV)); err != nil {
		t.Error(err)
	}
}

// TestBenchTimeslices: --slice-duration writes the timeslice files, and the requests of the
// slices add up to the run's, which add up to what reached the mock.
func TestBenchTimeslices(t *testing.T) {
	cfg := fastMock()
	cfg.TTFT = 15 * time.Millisecond
	cfg.ErrorRate = 0.2
	mock, url := testkit.StartMock(t, cfg)
	dir := t.TempDir()
	code, out := runBenchPlain(t, "--url", url, "--model", "m", "--isl", "10", "--osl", "4",
		"--concurrency", "2", "--benchmark-duration", "1.2", "--slice-duration", "0.3", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	sum := readJSONFile(t, filepath.Join(dir, "profile_export_aiperf.json"))
	whole := avgOf(sum, "request_count") + avgOf(sum, "error_request_count")
	ts := readJSONFile(t, filepath.Join(dir, aiperf.TimeslicesJSON))["timeslices"].([]any)
	var parts, errParts float64
	for i, s := range ts {
		sl := s.(map[string]any)
		if sl["timeslice_index"] != float64(i) {
			t.Errorf("slice %d has timeslice_index %v", i, sl["timeslice_index"])
		}
		parts += avgOf(sl, "request_count") + avgOf(sl, "error_request_count")
		errParts += avgOf(sl, "error_request_count")
	}
	arrived := len(mock.Arrivals())
	t.Logf("%d slices, %v requests in them, %v in the run, %d at the mock", len(ts), parts, whole, arrived)
	if len(ts) < 4 || parts != whole || whole != float64(arrived) || errParts == 0 {
		t.Errorf("%d slices holding %v requests (%v errors); the run %v, the mock %d", len(ts), parts, errParts, whole, arrived)
	}
	b, err := os.ReadFile(filepath.Join(dir, aiperf.TimeslicesCSV))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\r\n")
	if rows[0] != "Timeslice,Metric,Unit,Stat,Value" {
		t.Errorf("CSV header %q", rows[0])
	}
	var csvCount float64
	for _, r := range rows[1:] {
		if c := strings.Split(r, ","); len(c) == 5 && (c[1] == "Request Count" || c[1] == "Error Request Count") {
			var v float64
			json.Unmarshal([]byte(c[4]), &v)
			csvCount += v
		}
	}
	if csvCount != whole {
		t.Errorf("the CSV's request counts add up to %v, want %v", csvCount, whole)
	}
}

// FuzzConcurrencyList: --concurrency never panics, and what it accepts is a single value or
// a list of distinct positive values that reads back the same from its String.
func FuzzConcurrencyList(f *testing.F) {
	for _, s := range []string{"4", "1,4,16", " 2 , 3", "1,1", "0,2", "x", "", ",", "-3", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c concurrencyList
		if c.Set(s) != nil {
			return
		}
		if len(c.values) == 0 || c.level != c.values[0] {
			t.Fatalf("%q: values %v, level %d", s, c.values, c.level)
		}
		if len(c.values) > 1 {
			seen := map[int]bool{}
			for _, v := range c.values {
				if v < 1 || seen[v] {
					t.Fatalf("%q: accepted %v", s, c.values)
				}
				seen[v] = true
			}
		}
		var back concurrencyList
		if err := back.Set(c.String()); err != nil || !slices.Equal(back.values, c.values) {
			t.Fatalf("%q: %v reads back as %v (%v)", s, c.values, back.values, err)
		}
	})
}

// TestBenchSweepFlagErrors: bad values of the new flags are refused before anything is sent,
// with the flag's name in the message.
func TestBenchSweepFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "2", "--request-rate-ramp-duration", "3"}, "--request-rate-ramp-duration needs --request-rate"},
		{[]string{"--request-rate", "5", "--concurrency-ramp-duration", "3"}, "--concurrency-ramp-duration needs --concurrency"},
		{[]string{"--concurrency", "2", "--concurrency-ramp-duration", "-1"}, "--concurrency-ramp-duration -1"},
		{[]string{"--concurrency", "2", "--request-timeout-seconds", "0"}, "--request-timeout-seconds 0"},
		{[]string{"--concurrency", "2", "--warmup-duration", "NaN"}, "--warmup-duration NaN"},
		{[]string{"--concurrency", "2", "--slice-duration", "-0.5"}, "--slice-duration -0.5"},
		{[]string{"--concurrency", "2", "--num-profile-runs", "11"}, "--num-profile-runs 11"},
		{[]string{"--concurrency", "2", "--num-profile-runs", "2", "--confidence-level", "1"}, "--confidence-level 1"},
		{[]string{"--concurrency", "1,2", "--parameter-sweep-mode", "grid"}, "--parameter-sweep-mode \"grid\""},
		{[]string{"--concurrency", "1,2", "--worker-count", "2"}, "--worker-count is not supported"},
		{[]string{"--concurrency", "2", "--concurrency-ramp-duration", "1", "--worker-count", "2"}, "--worker-count is not supported"},
	} {
		var out, errOut bytes.Buffer
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(&errOut)
		code, err := benchMain(context.Background(), &out, &errOut, false, fs,
			append([]string{"--url", "http://127.0.0.1:1", "--model", "m", "--artifact-dir", t.TempDir()}, tc.args...), nil)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, %v; want 2 and %q", tc.args, code, err, tc.want)
		}
	}
}
