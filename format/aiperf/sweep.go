package aiperf

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/llmtap/llmtap/internal/jsonobj"
)

// The sweep aggregate's file names (AIPerf's AggregateSweepJsonExporter and
// AggregateSweepCsvExporter), written into the sweep's sweep_aggregate folder.
const (
	SweepJSON = "profile_export_aiperf_sweep.json"
	SweepCSV  = "profile_export_aiperf_sweep.csv"
)

// SweepValue is one value of a concurrency sweep and the runs made at it.
type SweepValue struct {
	Concurrency int
	Runs        []RunOutcome
}

// sweepPoint is one value's aggregate, as SweepAnalyzer sees it.
type sweepPoint struct {
	concurrency int
	metrics     map[string]Confidence
}

// dominates reports whether a Pareto-dominates b on (throughput up, latency down): at least as
// good on both and strictly better on one (AIPerf's _dominates).
func dominates(a, b [2]float64) bool {
	ge := a[0] >= b[0] && a[1] <= b[1]
	return ge && (a[0] > b[0] || a[1] < b[1])
}

// WriteSweepAggregate writes AIPerf's sweep aggregate (SweepAnalyzer.compute, serialized by
// AggregateSweepJsonExporter) into dir: aggregation_type "sweep", the run counts and failed
// runs, metadata (the swept parameter and its values, the number of combinations), each value's
// metrics (the confidence statistics of its runs, by "<tag>_<stat>"), the best configurations
// (highest request_throughput_avg mean; lowest time_to_first_token_p99 mean, else
// request_latency_p99) and the Pareto-optimal values on those two objectives, by value; and
// the same as AIPerf's four-section CSV. It returns the files written.
func WriteSweepAggregate(dir string, values []SweepValue, level float64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var points []sweepPoint
	var failed []RunOutcome
	runs, ok := 0, 0
	var swept []int
	for _, v := range values {
		swept = append(swept, v.Concurrency)
		runs += len(v.Runs)
		a, err := AggregateRuns(v.Runs, level)
		for _, f := range a.Failed {
			failed = append(failed, RunOutcome{Label: fmt.Sprintf("concurrency_%d/%s", v.Concurrency, f.Label), Err: f.Err})
		}
		if err != nil {
			continue
		}
		ok += len(a.Successful)
		points = append(points, sweepPoint{v.Concurrency, a.Metrics})
	}
	params := func(p sweepPoint) map[string]int { return map[string]int{"concurrency": p.concurrency} }
	per := make([]map[string]any, len(points))
	for i, p := range points {
		per[i] = map[string]any{"parameters": params(p), "metrics": p.metrics}
	}
	has := func(key string) bool {
		for _, p := range points {
			if _, ok := p.metrics[key]; !ok {
				return false
			}
		}
		return len(points) > 0
	}
	const tput = "request_throughput_avg"
	latency := ""
	for _, k := range []string{"time_to_first_token_p99", "request_latency_p99"} {
		if has(k) {
			latency = k
			break
		}
	}
	best := map[string]any{}
	pick := func(name, key string, better func(a, b float64) bool) {
		b := points[0]
		for _, p := range points[1:] {
			if better(p.metrics[key].Mean, b.metrics[key].Mean) {
				b = p
			}
		}
		best[name] = map[string]any{"parameters": params(b), "metric": b.metrics[key].Mean, "unit": b.metrics[key].Unit}
	}
	pareto := []map[string]int{}
	if has(tput) {
		pick("best_throughput", tput, func(a, b float64) bool { return a > b })
	}
	if latency != "" {
		pick("best_latency_p99", latency, func(a, b float64) bool { return a < b })
	}
	if has(tput) && latency != "" {
		obj := func(p sweepPoint) [2]float64 { return [2]float64{p.metrics[tput].Mean, p.metrics[latency].Mean} }
		var front []sweepPoint
		for _, p := range points {
			if !slices.ContainsFunc(points, func(q sweepPoint) bool { return q.concurrency != p.concurrency && dominates(obj(q), obj(p)) }) {
				front = append(front, p)
			}
		}
		slices.SortFunc(front, func(a, b sweepPoint) int { return a.concurrency - b.concurrency })
		for _, p := range front {
			pareto = append(pareto, params(p))
		}
	}
	doc, err := jsonobj.Marshal([]jsonobj.Member{
		{"aggregation_type", "sweep"}, {"num_profile_runs", runs}, {"num_successful_runs", ok},
		{"failed_runs", failedRuns(failed)},
		{"metadata", map[string]any{"sweep_parameters": []map[string]any{{"name": "concurrency", "values": swept}}, "num_combinations": len(swept)}},
		{"per_combination_metrics", per}, {"best_configurations", best}, {"pareto_optimal", pareto},
	})
	if err != nil {
		return nil, err
	}
	return writePair(dir, SweepJSON, doc, SweepCSV, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.UseCRLF = true // Python's csv.writer
		// Per-combination metrics: the first value's metrics, by name, five columns each.
		if len(points) > 0 {
			var names []string
			for k := range points[0].metrics {
				names = append(names, k)
			}
			slices.Sort(names)
			head := []string{"concurrency"}
			for _, n := range names {
				head = append(head, n+"_mean", n+"_std", n+"_min", n+"_max", n+"_cv")
			}
			cw.Write(head)
			for _, p := range points {
				row := []string{strconv.Itoa(p.concurrency)}
				for _, n := range names {
					c, ok := p.metrics[n]
					if !ok {
						row = append(row, "", "", "", "", "")
						continue
					}
					row = append(row, pyFloat(c.Mean, 2), pyFloat(c.Std, 2), pyFloat(c.Min, 2), pyFloat(c.Max, 2), pyFloat(c.CV, 4))
				}
				cw.Write(row)
			}
		}
		cw.Write(nil)
		cw.Write([]string{"Best Configurations"})
		if len(best) > 0 {
			cw.Write([]string{"Configuration", "concurrency", "Metric", "Unit"})
			for _, k := range []string{"best_throughput", "best_latency_p99"} {
				if b, ok := best[k].(map[string]any); ok {
					title := map[string]string{"best_throughput": "Best Throughput", "best_latency_p99": "Best Latency P99"}[k]
					cw.Write([]string{title, strconv.Itoa(b["parameters"].(map[string]int)["concurrency"]),
						pyFloat(b["metric"].(float64), 2), b["unit"].(string)})
				}
			}
		}
		cw.Write(nil)
		cw.Write([]string{"Pareto Optimal Points"})
		if len(pareto) == 0 {
			cw.Write([]string{"None"})
		} else {
			cw.Write([]string{"concurrency"})
			for _, p := range pareto {
				cw.Write([]string{strconv.Itoa(p["concurrency"])})
			}
		}
		cw.Write(nil)
		cw.Write([]string{"Metadata"})
		cw.Write([]string{"Field", "Value"})
		cw.Write([]string{"Aggregation Type", "sweep"})
		cw.Write([]string{"Sweep Parameters", "concurrency"})
		cw.Write([]string{"Number of Combinations", strconv.Itoa(len(swept))})
		cw.Write([]string{"Number of Profile Runs", strconv.Itoa(runs)})
		cw.Write([]string{"Number of Successful Runs", strconv.Itoa(ok)})
		cw.Flush()
		return cw.Error()
	})
}
