// Package report turns what a run left on disk — the proxy recorder's records, a `llmtap bench`
// artifact folder, a demo's output, with the timeline when one was written — into one
// self-contained HTML report (charts over time, latency CDFs and histograms per class and
// model, token timelines of the slowest requests, summary tables) and PNG images of each chart.
// Two runs compare side by side. It is plain Go: the llmtap report command is a thin wrapper.
//
// Charts are computed here once, as data (Chart); the HTML report draws them with the same
// renderer as the live dashboard (ui/static/charts.js) and the PNG export rasterizes them in Go
// (raster.go), so a PNG needs no browser.
package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Report is everything one report shows.
type Report struct {
	Title     string
	Generated time.Time
	Runs      []*Run
	// Summary has one row per run and cumulative group (model, class, status class).
	Summary []SummaryRow
	// Usage has one row per run, tenant, model and class: requests, tokens by kind, GPU time,
	// energy and cost, summed from the records (the first ReportTenants tenants of a run each
	// get a row; later ones are summed under "_other").
	Usage []UsageRow
	// Compare has one row per metric of every group the two runs share (empty for one run).
	Compare  []CompareRow
	Sections []Section
	// Splits are the slowest requests with a time split (where their time went), per run.
	Splits []SplitRow
	// Decisions are the canary verdict and the SLO attainment (set by Decide).
	Decisions Decisions
}

// Section is a titled grid of charts.
type Section struct {
	Title  string  `json:"title"`
	Note   string  `json:"note,omitempty"`
	Cols   int     `json:"cols"`
	Charts []Chart `json:"charts"`
}

// SummaryRow is one run's figures for one group, from telemetry/stats (HdrHistogram
// percentiles, the same numbers /llmtap/summary and llmtap bench print).
type SummaryRow struct {
	Run                             string
	Key                             stats.Key
	Requests, Errors                int64
	TTFT, ITL, Latency              stats.Stat
	OutputTokensPerSec, DurationSec float64
	TokenSources                    string
	HasTTFT, HasITL, HasLatency     bool
}

// UsageRow is one run's usage by one tenant, model and class.
type UsageRow struct {
	Run string
	stats.Usage
}

// ReportTenants is how many tenants of a run get a usage row of their own.
const ReportTenants = 1000

// CompareRow is one metric of one group in both runs.
type CompareRow struct {
	Key    stats.Key
	Metric string
	A, B   float64
}

// Ratio is B/A, NaN when A is zero.
func (c CompareRow) Ratio() float64 {
	if c.A == 0 {
		return math.NaN()
	}
	return c.B / c.A
}

// Build computes the report of one run, or of two runs compared (the first is the baseline).
func Build(runs ...*Run) (*Report, error) {
	if len(runs) == 0 || len(runs) > 2 {
		return nil, fmt.Errorf("a report covers one run or compares two, not %d", len(runs))
	}
	rep := &Report{Runs: runs, Generated: time.Now().UTC()}
	rep.Title = "llmtap report: " + runs[0].Name
	if len(runs) == 2 {
		if runs[0].Name == runs[1].Name {
			runs[0].Name, runs[1].Name = "A "+runs[0].Name, "B "+runs[1].Name
		}
		rep.Title = fmt.Sprintf("llmtap report: %s vs %s", runs[0].Name, runs[1].Name)
	}
	models := map[string]bool{}
	for _, run := range runs {
		for _, r := range run.Records {
			models[r.Model] = true
		}
	}
	multi := len(models) > 1
	// Colors by group key, the same in both runs of a comparison: the keys of every run,
	// sorted, as the dashboard orders them (colorOf).
	colors := map[string]int{}
	var keys []string
	for _, run := range runs {
		for _, r := range run.Records {
			k := r.Class
			if multi {
				k += " " + r.Model
			}
			if _, ok := colors[k]; !ok {
				colors[k] = 0
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	for i, k := range keys {
		colors[k] = colorOf(k, i)
	}
	var all [][]*group
	for _, run := range runs {
		prefix := ""
		if len(runs) == 2 {
			prefix = run.Name + ": "
		}
		all = append(all, groupsOf(run, prefix, multi, colors))
	}
	// In a comparison the two runs' groups get distinct colors: re-color the second run's.
	if len(runs) == 2 {
		for _, g := range all[1] {
			g.color += len(palette) / 2
		}
	}

	var over, timelines []Chart
	if len(runs) == 1 {
		over = timeCharts(runs[0], all[0], multi, "", "")
		timelines = []Chart{timelineChart(runs[0], "", "")}
	} else {
		a := timeCharts(runs[0], all[0], multi, "_a", " · "+runs[0].Name)
		b := timeCharts(runs[1], all[1], multi, "_b", " · "+runs[1].Name)
		over = interleave(a, b)
		timelines = []Chart{timelineChart(runs[0], "_a", " · "+runs[0].Name), timelineChart(runs[1], "_b", " · "+runs[1].Name)}
	}
	var groups []*group
	for _, gs := range all {
		groups = append(groups, gs...)
	}
	rep.Sections = []Section{
		{Title: "Over time", Cols: 2, Charts: over,
			Note: "The proxy timeline's windows, computed from the records: TTFT in the window of the first token, requests, errors and ITL in the window the response completed, output tokens where they were streamed. p50 solid, p99 dashed; failed requests count as errors and are left out of the latencies."},
		{Title: "Distributions", Cols: 2, Charts: distCharts(groups),
			Note: "Successful requests only, per traffic class (and model when there are several)."},
		{Title: "Token timelines", Cols: len(timelines), Charts: timelines,
			Note: "Content events of the slowest requests as they arrived: a flat stretch is a stall."},
	}
	for _, run := range runs {
		rows, usage := summaryRows(run)
		rep.Summary = append(rep.Summary, rows...)
		rep.Usage = append(rep.Usage, usage...)
	}
	rep.Splits = splitRows(runs) // split.go
	if len(runs) == 2 {
		rep.Compare = compareRows(rep.Summary, runs[0].Name, runs[1].Name)
	}
	return rep, nil
}

// interleave pairs charts of two runs by position (A's chart beside B's). The GPU charts
// exist only for a run with a timeline; a missing partner leaves its chart alone.
func interleave(a, b []Chart) []Chart {
	var out []Chart
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

// summaryRows aggregates a run with telemetry/stats and returns its cumulative groups and its
// usage rows.
func summaryRows(run *Run) ([]SummaryRow, []UsageRow) {
	agg := stats.New(stats.Options{Tenants: labelcap.New(ReportTenants)})
	for _, r := range run.Records {
		agg.Add(r)
	}
	var rows []SummaryRow
	sum := agg.Summary()
	usage := make([]UsageRow, 0, len(sum.Usage))
	for _, u := range sum.Usage {
		usage = append(usage, UsageRow{Run: run.Name, Usage: u})
	}
	for _, g := range sum.Groups {
		if g.Window != stats.WindowCumulative {
			continue
		}
		row := SummaryRow{Run: run.Name, Key: g.Key,
			Requests: int64(g.Scalars[stats.TagRequestCount].Value), Errors: int64(g.Scalars[stats.TagErrorRequestCount].Value),
			OutputTokensPerSec: g.Scalars[stats.TagOutputThroughput].Value, DurationSec: g.Scalars[stats.TagBenchmarkDuration].Value}
		row.TTFT, row.HasTTFT = g.Metrics[stats.TagTTFT]
		row.ITL, row.HasITL = g.Metrics[stats.TagITL]
		row.Latency, row.HasLatency = g.Metrics[stats.TagRequestLatency]
		row.TokenSources = sourcesText(g.Sources.OutputTokens)
		rows = append(rows, row)
	}
	return rows, usage
}

func sourcesText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s
}

// compareRows pairs the rows of the two runs by group (model, class, status class) and lists
// the main figures. When no group is in both — two runs cut to different classes, live against
// mirror — it pairs them by model and status class, naming both classes.
func compareRows(rows []SummaryRow, a, b string) []CompareRow {
	pair := func(key func(stats.Key) stats.Key) []CompareRow {
		byKey := map[stats.Key]*SummaryRow{}
		for i := range rows {
			if rows[i].Run == a {
				byKey[key(rows[i].Key)] = &rows[i]
			}
		}
		var out []CompareRow
		for _, rb := range rows {
			ra := byKey[key(rb.Key)]
			if rb.Run != b || ra == nil {
				continue
			}
			k := rb.Key
			if ra.Key.Class != rb.Key.Class {
				k.Class = ra.Key.Class + " vs " + rb.Key.Class
			}
			add := func(metric string, x, y float64, ok bool) {
				if ok {
					out = append(out, CompareRow{Key: k, Metric: metric, A: x, B: y})
				}
			}
			add("TTFT p50 (ms)", ra.TTFT.P50, rb.TTFT.P50, ra.HasTTFT && rb.HasTTFT)
			add("TTFT p99 (ms)", ra.TTFT.P99, rb.TTFT.P99, ra.HasTTFT && rb.HasTTFT)
			add("ITL p50 (ms)", ra.ITL.P50, rb.ITL.P50, ra.HasITL && rb.HasITL)
			add("ITL p99 (ms)", ra.ITL.P99, rb.ITL.P99, ra.HasITL && rb.HasITL)
			add("Request latency p99 (ms)", ra.Latency.P99, rb.Latency.P99, ra.HasLatency && rb.HasLatency)
			add("Output tokens/s", ra.OutputTokensPerSec, rb.OutputTokensPerSec, true)
			add("Errors", float64(ra.Errors), float64(rb.Errors), true)
		}
		return out
	}
	if out := pair(func(k stats.Key) stats.Key { return k }); len(out) > 0 {
		return out
	}
	return pair(func(k stats.Key) stats.Key { k.Class = ""; return k })
}

// Charts returns every chart of the report, in order.
func (rep *Report) Charts() []Chart {
	var out []Chart
	for _, s := range rep.Sections {
		out = append(out, s.Charts...)
	}
	return out
}
