package report

import (
	"fmt"
	"sort"

	"github.com/llmtap/llmtap/telemetry/record"
)

// splitBarWidth is the width of a where-the-time-went bar, in SVG units.
const splitBarWidth = 420

// SplitRow is one of the slowest requests with its time split, drawn as a stacked bar: each
// part a rectangle whose width is its share of the request's latency.
type SplitRow struct {
	Run, RequestID string
	LatencyMs      float64
	// Disagree is the record's ttft_disagree: the server's TTFT and the proxy's cannot be
	// reconciled.
	Disagree bool
	Parts    []SplitPart
}

// SplitPart is one rectangle of a SplitRow's bar.
type SplitPart struct {
	Name  string
	Ms    float64
	X, W  float64
	Color string
	Title string
}

// splitColors are the parts' colors, the dashboard's (ui/static/dashboard.js SPLIT_COLORS).
var splitColors = map[string]string{
	"proxy": "#6b7280", "queue": "#f59e0b", "load": "#a855f7", "prefill": "#2563eb", "inference": "#0891b2",
	"network": "#d1d5db", "upstream": "#93c5fd", "decode": "#16a34a", "generation": "#86efac",
}

// splitOrder is the order of the parts in a bar and in the legend: the server's parts when it
// reported them, upstream and generation when it did not.
var splitOrder = []string{"proxy", "queue", "load", "prefill", "inference", "network", "decode", "upstream", "generation"}

// splitLegend is the legend of the time-split bars: every part's name and color, in order.
func splitLegend() []SplitPart {
	out := make([]SplitPart, len(splitOrder))
	for i, n := range splitOrder {
		out[i] = SplitPart{Name: n, Color: splitColors[n]}
	}
	return out
}

// splitRows returns the slowest requests of each run that have a time split, slowest first.
func splitRows(runs []*Run) []SplitRow {
	var out []SplitRow
	for _, run := range runs {
		var recs []*record.Record
		for _, r := range run.Records {
			if r.Split != nil && r.RequestLatencyMs != nil {
				recs = append(recs, r)
			}
		}
		sort.SliceStable(recs, func(i, j int) bool { return *recs[i].RequestLatencyMs > *recs[j].RequestLatencyMs })
		for _, r := range recs[:min(slowestShown, len(recs))] {
			row := SplitRow{Run: run.Name, RequestID: r.RequestID, LatencyMs: *r.RequestLatencyMs, Disagree: r.Split.TTFTDisagree}
			segs := r.Segments()
			sum := 0.0
			for _, s := range segs {
				sum += s.Ms
			}
			x := 0.0
			for _, s := range segs {
				w := 0.0
				if sum > 0 {
					w = s.Ms / sum * splitBarWidth
				}
				row.Parts = append(row.Parts, SplitPart{Name: s.Name, Ms: s.Ms, X: x, W: w, Color: splitColors[s.Name],
					Title: fmt.Sprintf("%s %.1f ms", s.Name, s.Ms)})
				x += w
			}
			out = append(out, row)
		}
	}
	return out
}
