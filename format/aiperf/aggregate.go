package aiperf

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	json "github.com/goccy/go-json"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/llmtap/llmtap/internal/jsonobj"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Aggregate export file names of repeated runs (AIPerf's --num-profile-runs), written into the
// aggregate folder.
const (
	AggregateJSON = "profile_export_aiperf_aggregate.json"
	AggregateCSV  = "profile_export_aiperf_aggregate.csv"
)

// aggregateSchema is the schema_version of AIPerf's aggregate file
// (AggregateConfidenceJsonExporter.SCHEMA_VERSION).
const aggregateSchema = "1.0"

// Confidence is one metric statistic across repeated runs, as AIPerf's ConfidenceAggregation
// computes it (ai-dynamo/aiperf src/aiperf/orchestrator/aggregation/confidence.py): the sample
// mean and standard deviation (ddof=1), min and max, the coefficient of variation std/mean
// (a ratio, +Inf for a zero mean), the standard error std/√n and the two-sided Student-t
// interval mean ± t·se with t = t.ppf(1 − (1−level)/2, n−1). One value gives std, cv and se 0,
// the interval collapsed to the value, and t NaN (no interval).
type Confidence struct {
	Mean, Std, Min, Max, CV, SE, CILow, CIHigh, TCritical float64
	Unit                                                  string
}

// NewConfidence computes the statistics of values (finite ones only, as AIPerf skips NaN and
// ±Inf) at confidence level (0 < level < 1). No finite value gives every statistic NaN.
func NewConfidence(values []float64, level float64, unit string) Confidence {
	var v []float64
	for _, x := range values {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	nan := math.NaN()
	if len(v) == 0 {
		return Confidence{nan, nan, nan, nan, nan, nan, nan, nan, nan, unit}
	}
	n := float64(len(v))
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / n
	c := Confidence{Mean: mean, Min: slices.Min(v), Max: slices.Max(v), CILow: mean, CIHigh: mean, TCritical: nan, Unit: unit}
	if len(v) == 1 {
		return c
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	c.Std = math.Sqrt(ss / (n - 1))
	c.CV = math.Inf(1)
	if mean != 0 {
		c.CV = c.Std / mean
	}
	c.SE = c.Std / math.Sqrt(n)
	c.TCritical = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - (1-level)/2)
	c.CILow, c.CIHigh = mean-c.TCritical*c.SE, mean+c.TCritical*c.SE
	return c
}

// RunOutcome is one of the repeated runs an aggregate is made of: its label (run_0001), its
// export (profile_export_aiperf.json's content, in memory), and why it failed (empty: it
// succeeded).
type RunOutcome struct {
	Label  string
	Export *Export
	Err    string
}

// AggregateResult is AIPerf's AggregateResult of the confidence strategy: the metrics by
// "<tag>_<stat>" and the runs they came from.
type AggregateResult struct {
	Runs       int
	Successful []string // labels
	Failed     []RunOutcome
	Level      float64
	Metrics    map[string]Confidence
}

// AggregateRuns takes the profile_export_aiperf.json of every successful run and computes the
// confidence statistics of every statistic of every metric in them (AIPerf's
// _aggregate_metrics: a metric's values across the runs that have it). It fails when no run
// succeeded.
func AggregateRuns(runs []RunOutcome, level float64) (AggregateResult, error) {
	res := AggregateResult{Runs: len(runs), Level: level, Metrics: map[string]Confidence{}}
	values := map[string][]float64{}
	units := map[string]string{}
	for _, r := range runs {
		if r.Err != "" {
			res.Failed = append(res.Failed, r)
			continue
		}
		m, err := r.summaryMetrics()
		if err != nil {
			res.Failed = append(res.Failed, RunOutcome{Label: r.Label, Err: err.Error()})
			continue
		}
		res.Successful = append(res.Successful, r.Label)
		for tag, st := range m {
			for _, k := range stats.AIPerfStatKeys() {
				if v, ok := st.Values[k]; ok {
					key := tag + "_" + k
					values[key] = append(values[key], v)
					if units[key] == "" {
						units[key] = st.Unit
					}
				}
			}
		}
	}
	if len(res.Successful) == 0 {
		return res, fmt.Errorf("all %d runs failed: no confidence statistics", len(runs))
	}
	for k, v := range values {
		res.Metrics[k] = NewConfidence(v, level, units[k])
	}
	return res, nil
}

// tableRows are the statistics Table shows, in order, where the runs have them.
var tableRows = []string{
	"time_to_first_token_avg", "time_to_first_token_p50", "time_to_first_token_p99",
	"inter_token_latency_avg", "inter_token_latency_p99",
	"request_latency_avg", "request_latency_p99",
	"output_token_throughput_avg", "request_throughput_avg",
}

// Table is the aggregate as a console table: the main statistics' mean across the runs, its
// confidence interval at the aggregate's level, the coefficient of variation and the range
// (every statistic is in the aggregate files).
func (a AggregateResult) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "statistic\tmean\t%g%% interval\tCV\tmin\tmax\tunit\t\n", 100*a.Level)
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return strconv.FormatFloat(v, 'g', 5, 64)
	}
	for _, k := range tableRows {
		c, ok := a.Metrics[k]
		if !ok {
			continue
		}
		iv := "-"
		if !math.IsNaN(c.TCritical) {
			iv = "[" + f(c.CILow) + ", " + f(c.CIHigh) + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k, f(c.Mean), iv, f(c.CV), f(c.Min), f(c.Max), c.Unit)
	}
	tw.Flush()
	return b.String()
}

// summaryMetrics returns the metrics of the run's profile_export_aiperf.json, read as any
// summary is (ParseSummary). The export is encoded as the file is written, so both give the
// same figures.
func (r RunOutcome) summaryMetrics() (map[string]Metric, error) {
	if r.Export == nil {
		return nil, errors.New("no export")
	}
	b, err := json.Marshal(r.Export)
	if err != nil {
		return nil, err
	}
	s, err := ParseSummary(b)
	return s.Metrics, err
}

// WriteAggregate writes AIPerf's two aggregate files into dir (created): the JSON
// (AggregateConfidenceJsonExporter: schema_version, aiperf_version, metadata, metrics by
// "<tag>_<stat>" with mean, std, min, max, cv, se, ci_low, ci_high, t_critical, unit; NaN and
// infinite values written as null, as pydantic does) and the CSV (AggregateConfidenceCsvExporter:
// a metrics table, a blank line, then the metadata as title-cased key, value rows).
func WriteAggregate(dir string, a AggregateResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	keys := make([]string, 0, len(a.Metrics))
	for k := range a.Metrics {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	meta := []jsonobj.Member{
		{"aggregation_type", "confidence"}, {"num_profile_runs", a.Runs},
		{"num_successful_runs", len(a.Successful)}, {"failed_runs", failedRuns(a.Failed)},
		{"confidence_level", a.Level}, {"run_labels", a.Successful},
	}
	if len(a.Successful) == 1 {
		meta = append(meta, jsonobj.Member{"single_run", true})
	}
	metab, err := jsonobj.Marshal(meta)
	if err != nil {
		return nil, err
	}
	doc, err := jsonobj.Marshal([]jsonobj.Member{{"schema_version", aggregateSchema}, {"aiperf_version", "llmtap"},
		{"metadata", json.RawMessage(metab)}, {"metrics", a.Metrics}})
	if err != nil {
		return nil, err
	}
	return writePair(dir, AggregateJSON, doc, AggregateCSV, func(w io.Writer) error { return writeAggregateCSV(w, a, keys) })
}

// failedRuns is failed_runs: a {label, error} object per failed run, [] when none failed.
func failedRuns(runs []RunOutcome) []map[string]string {
	out := make([]map[string]string, len(runs))
	for i, f := range runs {
		out[i] = map[string]string{"label": f.Label, "error": f.Err}
	}
	return out
}

// MarshalJSON writes c as the aggregate files do: NaN and infinite statistics as null.
func (c Confidence) MarshalJSON() ([]byte, error) {
	return jsonobj.Marshal([]jsonobj.Member{{"mean", num(c.Mean)}, {"std", num(c.Std)}, {"min", num(c.Min)},
		{"max", num(c.Max)}, {"cv", num(c.CV)}, {"se", num(c.SE)}, {"ci_low", num(c.CILow)},
		{"ci_high", num(c.CIHigh)}, {"t_critical", num(c.TCritical)}, {"unit", c.Unit}})
}

// num is v, or nil when JSON cannot hold it.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeAggregateCSV(w io.Writer, a AggregateResult, keys []string) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // Python's csv.writer
	cw.Write([]string{"metric", "mean", "std", "min", "max", "cv", "se", "ci_low", "ci_high", "t_critical", "unit"})
	for _, k := range keys {
		c := a.Metrics[k]
		cw.Write([]string{k, pyFloat(c.Mean, 2), pyFloat(c.Std, 2), pyFloat(c.Min, 2), pyFloat(c.Max, 2),
			pyFloat(c.CV, 4), pyFloat(c.SE, 4), pyFloat(c.CILow, 2), pyFloat(c.CIHigh, 2), pyFloat(c.TCritical, 4), c.Unit})
	}
	cw.Write(nil)
	cw.Write([]string{"Aggregation Type", "confidence"})
	cw.Write([]string{"Total Runs", strconv.Itoa(a.Runs)})
	cw.Write([]string{"Successful Runs", strconv.Itoa(len(a.Successful))})
	cw.Write([]string{"Confidence Level", strconv.FormatFloat(a.Level, 'f', -1, 64)})
	cw.Write([]string{"Run Labels", pyList(a.Successful)})
	if len(a.Successful) == 1 {
		cw.Write([]string{"Single Run", "True"})
	}
	cw.Flush()
	return cw.Error()
}

// pyFloat formats v as Python's f"{v:.{d}f}" does, inf and nan included.
func pyFloat(v float64, d int) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// pyList formats a list of strings as Python's str() does: ['a', 'b'].
func pyList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = "'" + x + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
