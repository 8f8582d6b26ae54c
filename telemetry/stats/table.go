package stats

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tableStats are the columns of the console table, AIPerf's console selection.
var tableStats = []string{"avg", "min", "max", "p99", "p90", "p50", "std"}

// csvStats are the columns of the CSV distribution section, AIPerf's STAT_KEYS.
var csvStats = []string{"avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}

// AIPerfStatKeys returns AIPerf's STAT_KEYS, the statistics of a distribution in the order its
// CSV files list them.
func AIPerfStatKeys() []string { return slices.Clone(csvStats) }

// Get returns one statistic of s by its AIPerf key (one of AIPerfStatKeys), 0 for another key.
func (s Stat) Get(key string) float64 { return s.field(key) }

// field returns one statistic of s by its AIPerf key.
func (s Stat) field(key string) float64 {
	switch key {
	case "avg":
		return s.Avg
	case "min":
		return s.Min
	case "max":
		return s.Max
	case "p1":
		return s.P1
	case "p5":
		return s.P5
	case "p10":
		return s.P10
	case "p25":
		return s.P25
	case "p50":
		return s.P50
	case "p75":
		return s.P75
	case "p90":
		return s.P90
	case "p95":
		return s.P95
	case "p99":
		return s.P99
	case "std":
		return s.Std
	}
	return math.NaN()
}

// WriteTable renders a summary as AIPerf-style console tables, one per group: a row per
// distribution metric ("Time to First Token (ms)") with the columns avg, min, max, p99, p90,
// p50 and std, then a row per single-value metric with only avg filled (the others "N/A",
// as AIPerf prints them), then the error classes, the token count sources and any clamped
// values. Columns are aligned with spaces; numbers have two decimals and thousands separators.
func WriteTable(w io.Writer, s Summary) error {
	var b strings.Builder
	for i, g := range s.Groups {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeGroupTable(&b, g)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGroupTable(b *strings.Builder, g GroupSummary) {
	fmt.Fprintf(b, "model=%s class=%s status_class=%s window=%s", g.Key.Model, g.Key.Class, g.Key.StatusClass, g.Window)
	if !g.Start.IsZero() {
		fmt.Fprintf(b, " from=%s to=%s", g.Start.UTC().Format(time.RFC3339Nano), g.End.UTC().Format(time.RFC3339Nano))
	}
	b.WriteByte('\n')

	rows := [][]string{append([]string{"Metric"}, tableStats...)}
	var clamped []string
	for i := range specs {
		st, ok := g.Metrics[specs[i].tag]
		if !ok {
			continue
		}
		row := []string{specs[i].header + " (" + st.Unit + ")"}
		for _, k := range tableStats {
			row = append(row, formatNumber(st.field(k)))
		}
		rows = append(rows, row)
		if st.Clamped > 0 {
			clamped = append(clamped, fmt.Sprintf("%s=%d", specs[i].tag, st.Clamped))
		}
	}
	for _, sc := range scalars {
		v, ok := g.Scalars[sc.tag]
		if !ok {
			continue
		}
		row := []string{sc.header + " (" + v.Unit + ")", formatNumber(v.Value)}
		for range tableStats[1:] {
			row = append(row, "N/A")
		}
		rows = append(rows, row)
	}
	writeAligned(b, rows)

	if len(g.Errors) > 0 {
		fmt.Fprintf(b, "Errors: %s\n", joinCounts(g.Errors))
	}
	if len(g.Sources.OutputTokens) > 0 || len(g.Sources.InputTokens) > 0 {
		fmt.Fprintf(b, "Token counts from: output %s; input %s\n", joinCounts(g.Sources.OutputTokens), joinCounts(g.Sources.InputTokens))
	}
	if len(clamped) > 0 {
		fmt.Fprintf(b, "Values outside the histogram range: %s\n", strings.Join(clamped, " "))
	}
}

// writeAligned writes rows with the first column left-aligned and the others right-aligned.
func writeAligned(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				line.WriteString(c + pad)
			} else {
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// joinCounts writes a map of counts as "a=1 b=2" in key order ("none" for an empty map).
func joinCounts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// formatNumber writes v with two decimals and comma thousands separators (AIPerf's "{:,.2f}").
func formatNumber(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var out strings.Builder
	for i, d := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteRune(d)
	}
	res := out.String() + "." + frac
	if neg {
		res = "-" + res
	}
	return res
}
