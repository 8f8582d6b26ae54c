package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// TestRunSweepAggregatesInMemory runs a sweep of two values twice over, with runs that write
// nothing to disk: the aggregates come from the exports the runs returned, a failed run is
// left out of its value's aggregate and makes the error, and StopSweep ends the sweep at once.
func TestRunSweepAggregatesInMemory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	sw := Sweep{Base: base, Levels: []int{2, 8}, Runs: 2, Seed: 5, Confidence: 0.95}
	var ran []string
	var notes []string
	err := RunSweep(context.Background(), sw, func(_ context.Context, c SweepCell) (*aiperf.Export, error) {
		ran = append(ran, c.Label)
		if c.Level == 8 && c.Run == 1 {
			return nil, errors.New("exit 1: the server went away")
		}
		tput := stats.Scalar{Unit: "requests/sec", Value: float64(10*c.Level + c.Run)}
		return &aiperf.Export{Group: stats.GroupSummary{Scalars: map[string]stats.Scalar{stats.TagRequestThroughput: tput}}}, nil
	}, func(s string) { notes = append(notes, s) })
	if err == nil || !strings.Contains(err.Error(), "1 of 4 runs failed: run_0002 concurrency_8: exit 1: the server went away") {
		t.Errorf("error %v: want the failed run named", err)
	}
	if want := "run_0001 concurrency_2,run_0001 concurrency_8,run_0002 concurrency_2,run_0002 concurrency_8"; strings.Join(ran, ",") != want {
		t.Errorf("ran %v, want %s", ran, want)
	}
	if len(notes) != 3 {
		t.Errorf("notes %q: want one per value's aggregate and one for the sweep", notes)
	}
	read := func(parts ...string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(append([]string{base}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	mean := func(agg map[string]any) any {
		return agg["metrics"].(map[string]any)["request_throughput_avg"].(map[string]any)["mean"]
	}
	if a := read("aggregate", "concurrency_2", aiperf.AggregateJSON); mean(a) != 20.5 {
		t.Errorf("concurrency 2: mean throughput %v, want 20.5 from runs 20 and 21", mean(a))
	}
	if a := read("aggregate", "concurrency_8", aiperf.AggregateJSON); mean(a) != 80.0 {
		t.Errorf("concurrency 8: mean throughput %v, want 80 from its one successful run", mean(a))
	}
	s := read("sweep_aggregate", aiperf.SweepJSON)
	best := s["best_configurations"].(map[string]any)["best_throughput"].(map[string]any)
	if best["parameters"].(map[string]any)["concurrency"] != 8.0 {
		t.Errorf("best throughput %v: want concurrency 8", best)
	}

	ran = nil
	stop := errors.New("bad flags")
	err = RunSweep(context.Background(), Sweep{Base: t.TempDir(), Runs: 3, Confidence: 0.9}, func(context.Context, SweepCell) (*aiperf.Export, error) {
		ran = append(ran, "x")
		return nil, &StopSweep{Err: stop}
	}, nil)
	if err != stop || len(ran) != 1 {
		t.Errorf("StopSweep: error %v after %d runs, want %v after 1", err, len(ran), stop)
	}
}

// TestSweepPlanLayouts checks the folders, seeds and warmups of every combination of a sweep
// and repeated runs against AIPerf's orchestrator layout.
func TestSweepPlanLayouts(t *testing.T) {
	t.Parallel()
	base := Sweep{Base: "B", Seed: 10, Runs: 1}
	type want struct {
		dir, agg string
		level    int
		seed     uint64
		noWarmup bool
	}
	check := func(name string, sw Sweep, ws []want) {
		t.Helper()
		cells := sw.Plan()
		if len(cells) != len(ws) {
			t.Fatalf("%s: %d cells, want %d", name, len(cells), len(ws))
		}
		for i, w := range ws {
			c := cells[i]
			got := want{filepath.ToSlash(c.Dir), filepath.ToSlash(c.AggDir), c.Level, c.Seed, c.NoWarmup}
			if got != w {
				t.Errorf("%s cell %d: %+v, want %+v", name, i, got, w)
			}
		}
	}
	with := func(f func(*Sweep)) Sweep { s := base; f(&s); return s }
	check("sweep", with(func(s *Sweep) { s.Levels = []int{2, 8} }), []want{
		{"B/concurrency_2", "", 2, 10, false}, {"B/concurrency_8", "", 8, 11, false}})
	check("same seed", with(func(s *Sweep) { s.Levels, s.SameSeed = []int{2, 8}, true }), []want{
		{"B/concurrency_2", "", 2, 10, false}, {"B/concurrency_8", "", 8, 10, false}})
	check("runs", with(func(s *Sweep) { s.Runs = 2 }), []want{
		{"B/profile_runs/run_0001", "B/aggregate", 0, 10, false}, {"B/profile_runs/run_0002", "B/aggregate", 0, 10, true}})
	check("repeated", with(func(s *Sweep) { s.Levels, s.Runs = []int{2, 8}, 2 }), []want{
		{"B/profile_runs/run_0001/concurrency_2", "B/aggregate/concurrency_2", 2, 10, false},
		{"B/profile_runs/run_0001/concurrency_8", "B/aggregate/concurrency_8", 8, 11, false},
		{"B/profile_runs/run_0002/concurrency_2", "B/aggregate/concurrency_2", 2, 10, true},
		{"B/profile_runs/run_0002/concurrency_8", "B/aggregate/concurrency_8", 8, 11, true}})
	check("independent", with(func(s *Sweep) { s.Levels, s.Runs, s.Independent, s.WarmupAfterFirst = []int{2, 8}, 2, true, true }), []want{
		{"B/concurrency_2/profile_runs/run_0001", "B/concurrency_2/aggregate", 2, 10, false},
		{"B/concurrency_2/profile_runs/run_0002", "B/concurrency_2/aggregate", 2, 10, false},
		{"B/concurrency_8/profile_runs/run_0001", "B/concurrency_8/aggregate", 8, 11, false},
		{"B/concurrency_8/profile_runs/run_0002", "B/concurrency_8/aggregate", 8, 11, false}})
}
