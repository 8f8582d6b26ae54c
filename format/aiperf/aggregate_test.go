package aiperf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// TestConfidenceMatchesAIPerfsFormula checks the port of AIPerf's ConfidenceAggregation against
// answers worked out by hand with scipy.stats.t.ppf's values: sample std (ddof=1), se = std/√n,
// mean ± t(1 − α/2, n−1)·se.
func TestConfidenceMatchesAIPerfsFormula(t *testing.T) {
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.10g, want %.10g", name, got, want)
		}
	}
	c := NewConfidence([]float64{10, 12, 14}, 0.95, "ms")
	near("mean", c.Mean, 12, 1e-12)
	near("std", c.Std, 2, 1e-12)
	near("se", c.SE, 2/math.Sqrt(3), 1e-12)
	near("cv", c.CV, 2.0/12, 1e-12)
	near("t_critical", c.TCritical, 4.302652729749464, 1e-6) // scipy.stats.t.ppf(0.975, 2)
	near("ci_low", c.CILow, 12-4.302652729749464*2/math.Sqrt(3), 1e-6)
	near("ci_high", c.CIHigh, 16.968275, 1e-5) // 12 + 4.3026527 × 1.1547005
	if c.Min != 10 || c.Max != 14 || c.Unit != "ms" {
		t.Errorf("min %v max %v unit %q", c.Min, c.Max, c.Unit)
	}
	// Other levels and sizes: t.ppf(0.995, 4) and t.ppf(0.95, 1).
	near("t(0.99, df 4)", NewConfidence([]float64{1, 2, 3, 4, 5}, 0.99, "").TCritical, 4.604094871415897, 1e-6)
	near("t(0.90, df 1)", NewConfidence([]float64{1, 2}, 0.90, "").TCritical, 6.313751514675041, 1e-6)

	// One finite value: the degenerate shape (no interval), NaN and Inf skipped.
	one := NewConfidence([]float64{7, math.NaN(), math.Inf(1)}, 0.95, "")
	if one.Mean != 7 || one.Std != 0 || one.SE != 0 || one.CILow != 7 || one.CIHigh != 7 || !math.IsNaN(one.TCritical) {
		t.Errorf("single value: %+v", one)
	}
	if z := NewConfidence([]float64{-1, 1}, 0.95, ""); !math.IsInf(z.CV, 1) {
		t.Errorf("zero mean: cv %v, want +Inf", z.CV)
	}
}

// TestAggregateRunsReadsTheSummaries aggregates two runs' summaries as their exports encode
// them and checks the files' shapes.
func TestAggregateRunsReadsTheSummaries(t *testing.T) {
	dir := t.TempDir()
	var runs []RunOutcome
	for i, v := range []float64{10, 14} {
		e := &Export{Group: stats.GroupSummary{
			Metrics: map[string]stats.Stat{"time_to_first_token": {Unit: "ms", Avg: v, P99: v}},
			Scalars: map[string]stats.Scalar{"request_count": {Unit: "requests", Value: v}}}}
		runs = append(runs, RunOutcome{Label: []string{"run_0001", "run_0002"}[i], Export: e})
	}
	runs = append(runs, RunOutcome{Label: "run_0003", Err: "exit 1"})
	a, err := AggregateRuns(runs, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := a.Metrics["time_to_first_token_avg"]
	if !ok || c.Mean != 12 || c.Unit != "ms" || len(a.Successful) != 2 || len(a.Failed) != 1 {
		t.Fatalf("aggregate %+v", a)
	}
	if _, ok := a.Metrics["input_config_avg"]; ok {
		t.Error("input_config is not a metric")
	}
	files, err := WriteAggregate(filepath.Join(dir, "aggregate"), a)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(files[1])
	csv := string(b)
	for _, want := range []string{"metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit\r\n",
		"time_to_first_token_avg,12.00,2.83,10.00,14.00,0.2357,2.0000,-13.41,37.41,12.7062,ms\r\n",
		"\r\n\r\nAggregation Type,confidence\r\nTotal Runs,3\r\nSuccessful Runs,2\r\n", `Run Labels,"['run_0001', 'run_0002']"`} {
		if !strings.Contains(csv, want) {
			t.Errorf("aggregate CSV lacks %q:\n%s", want, csv)
		}
	}
	if _, err := AggregateRuns(runs[2:], 0.95); err == nil {
		t.Error("no successful run: want an error")
	}
}

// TestSweepAggregateParetoAndBest ports SweepAnalyzer's worked example: throughput 100, 150, 140
// and TTFT p99 50, 80, 90 at concurrency 10, 20, 30 make 10 and 20 Pareto-optimal, 20 the best
// throughput and 10 the best latency.
func TestSweepAggregateParetoAndBest(t *testing.T) {
	dir := t.TempDir()
	var values []SweepValue
	for _, p := range []struct {
		c          int
		tput, ttft float64
	}{{10, 100, 50}, {20, 150, 80}, {30, 140, 90}} {
		e := &Export{Group: stats.GroupSummary{
			Metrics: map[string]stats.Stat{"time_to_first_token": {Unit: "ms", Avg: 1, P99: p.ttft}},
			Scalars: map[string]stats.Scalar{"request_throughput": {Unit: "requests/sec", Value: p.tput}}}}
		values = append(values, SweepValue{Concurrency: p.c, Runs: []RunOutcome{{Label: "run_0001", Export: e}}})
	}
	files, err := WriteSweepAggregate(filepath.Join(dir, "sweep_aggregate"), values, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(files[0])
	var got struct {
		Type string `json:"aggregation_type"`
		Runs int    `json:"num_profile_runs"`
		Per  []any  `json:"per_combination_metrics"`
		Best map[string]struct {
			Parameters map[string]int `json:"parameters"`
			Metric     float64        `json:"metric"`
			Unit       string         `json:"unit"`
		} `json:"best_configurations"`
		Pareto []map[string]int `json:"pareto_optimal"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	bt, bl := got.Best["best_throughput"], got.Best["best_latency_p99"]
	if got.Type != "sweep" || got.Runs != 3 || len(got.Per) != 3 ||
		bt.Parameters["concurrency"] != 20 || bt.Metric != 150 || bt.Unit != "requests/sec" ||
		bl.Parameters["concurrency"] != 10 || bl.Metric != 50 ||
		len(got.Pareto) != 2 || got.Pareto[0]["concurrency"] != 10 || got.Pareto[1]["concurrency"] != 20 {
		t.Errorf("sweep aggregate:\n%s", b)
	}
	c, _ := os.ReadFile(files[1])
	for _, want := range []string{
		"concurrency,request_throughput_avg_mean,request_throughput_avg_std,request_throughput_avg_min,request_throughput_avg_max,request_throughput_avg_cv,time_to_first_token_avg_mean,",
		"\r\n20,150.00,0.00,150.00,150.00,0.0000,1.00,",
		"\r\n\r\nBest Configurations\r\nConfiguration,concurrency,Metric,Unit\r\nBest Throughput,20,150.00,requests/sec\r\nBest Latency P99,10,50.00,ms\r\n",
		"\r\n\r\nPareto Optimal Points\r\nconcurrency\r\n10\r\n20\r\n\r\nMetadata\r\nField,Value\r\nAggregation Type,sweep\r\nSweep Parameters,concurrency\r\nNumber of Combinations,3\r\nNumber of Profile Runs,3\r\nNumber of Successful Runs,3\r\n",
	} {
		if !strings.Contains(string(c), want) {
			t.Errorf("sweep CSV lacks %q:\n%s", want, c)
		}
	}
}

// TestAggregateTable: repeated runs end with their confidence table on the console (issue 34:
// sweeps and repeated runs printed none): the mean across the runs, its Student-t interval
// at the level, the CV and the range of each main statistic the runs have.
func TestAggregateTable(t *testing.T) {
	a := AggregateResult{Level: 0.95, Metrics: map[string]Confidence{
		"time_to_first_token_p99": NewConfidence([]float64{100, 110, 120}, 0.95, "ms"),
		"request_throughput_avg":  NewConfidence([]float64{5}, 0.95, "requests/sec"),
	}}
	tab := a.Table()
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "95% interval") {
		t.Fatalf("table:\n%s", tab)
	}
	// mean 110, sd 10, se 5.7735, t(0.975, 2) 4.3027: [85.159, 134.84].
	if f := strings.Fields(lines[1]); f[0] != "time_to_first_token_p99" || f[1] != "110" || f[2] != "[85.159," || f[3] != "134.84]" || f[5] != "100" || f[6] != "120" || f[7] != "ms" {
		t.Errorf("row %q", lines[1])
	}
	// One run: no interval.
	if f := strings.Fields(lines[2]); f[0] != "request_throughput_avg" || f[2] != "-" {
		t.Errorf("one run's row %q", lines[2])
	}
}
