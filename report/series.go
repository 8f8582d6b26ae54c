package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Limits that keep a report small and its charts legible whatever the run's size.
const (
	maxWindows   = 600 // time-series points per line: the window grows past 1 s for long runs
	cdfPoints    = 400 // points per CDF line
	histBins     = 40  // bars per histogram series
	histTail     = 0.995
	slowestShown = 5 // requests in the token-timeline chart
)

// metricDef is one per-request value the distributions are drawn for.
type metricDef struct {
	id, title, unit string
	value           func(r *record.Record) (float64, bool)
	integer         bool
}

func ptr(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

var distMetrics = []metricDef{
	{"ttft", "TTFT", "ms", func(r *record.Record) (float64, bool) { return ptr(r.TTFTMs) }, false},
	{"itl", "ITL", "ms", func(r *record.Record) (float64, bool) { return ptr(r.ITLMs) }, false},
	{"latency", "Request latency", "ms", func(r *record.Record) (float64, bool) { return ptr(r.RequestLatencyMs) }, false},
	{"output_tokens", "Output tokens", "tokens", func(r *record.Record) (float64, bool) { return float64(r.OutputTokens), true }, true},
}

// group names a set of records drawn as one series: a traffic class, with the model when the
// runs hold more than one, and the run's name when there are two runs.
type group struct {
	name  string
	color int
	recs  []*record.Record
}

// groupsOf splits a run's records by class (and model when models > 1), in a stable order.
func groupsOf(run *Run, prefix string, multiModel bool, colors map[string]int) []*group {
	byKey := map[string]*group{}
	var keys []string
	for _, r := range run.Records {
		k := r.Class
		if multiModel {
			k += " " + r.Model
		}
		g := byKey[k]
		if g == nil {
			c, ok := colors[k]
			if !ok {
				c = len(colors)
				colors[k] = c
			}
			g = &group{name: prefix + k, color: c}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.recs = append(g.recs, r)
	}
	sort.Strings(keys)
	out := make([]*group, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// span returns the first start and the last end of a run's records.
func span(recs []*record.Record) (time.Time, time.Time) {
	lo, hi := recs[0].Start, recs[0].Start
	for _, r := range recs {
		if r.Start.Before(lo) {
			lo = r.Start
		}
		if e := end(r); e.After(hi) {
			hi = e
		}
	}
	return lo, hi
}

func end(r *record.Record) time.Time {
	return r.Start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
}

// windowFor is the time-series window of a run lasting d: 1 s, or a round multiple of it
// that keeps the series within maxWindows points.
func windowFor(d time.Duration) time.Duration {
	w := time.Second
	for _, m := range []time.Duration{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		w = m * time.Second
		if d/w < maxWindows {
			break
		}
	}
	return w
}

// quantile is the nearest-rank quantile q (0..1) of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// timeCharts draws one run over time, in windows: TTFT and ITL p50/p99 per group, request,
// token and error rates, in-flight requests, and the GPU when the run has a timeline. Requests
// count in the window they completed in; x is seconds since the run's first request.
func timeCharts(run *Run, groups []*group, idSuffix, titleSuffix string) []Chart {
	t0, t1 := span(run.Records)
	w := windowFor(t1.Sub(t0))
	n := int(t1.Sub(t0)/w) + 1
	ws := w.Seconds()
	xOf := func(i int) float64 { return float64(i+1) * ws }
	x := Axis{Label: "s since start"}
	win := fmt.Sprintf(" (%s windows)%s", w, titleSuffix)

	ttft := Chart{ID: "ttft_time" + idSuffix, Title: "TTFT p50 / p99 (ms)" + win, Kind: KindLine, X: x, Y: Axis{Label: "ms"}}
	itl := Chart{ID: "itl_time" + idSuffix, Title: "ITL p50 / p99 (ms)" + win, Kind: KindLine, X: x, Y: Axis{Label: "ms"}}
	reqs := Chart{ID: "request_rate" + idSuffix, Title: "Requests/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "req/s"}}
	toks := Chart{ID: "token_rate" + idSuffix, Title: "Output tokens/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "tok/s"}}
	errs := Chart{ID: "error_rate" + idSuffix, Title: "Errors/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "err/s"}}
	infl := Chart{ID: "in_flight" + idSuffix, Title: "Requests in flight" + titleSuffix, Kind: KindLine, X: x, Y: Axis{Label: "requests"}}

	for _, g := range groups {
		ttftW := make([][]float64, n)
		itlW := make([][]float64, n)
		done, failed, tokens := make([]float64, n), make([]float64, n), make([]float64, n)
		for _, r := range g.recs {
			i := min(n-1, max(0, int(end(r).Sub(t0)/w)))
			done[i]++
			if !r.OK() {
				failed[i]++
				continue
			}
			tokens[i] += float64(r.OutputTokens)
			if v, ok := ptr(r.TTFTMs); ok {
				ttftW[i] = append(ttftW[i], v)
			}
			if v, ok := ptr(r.ITLMs); ok {
				itlW[i] = append(itlW[i], v)
			}
		}
		pct := func(vals [][]float64) (p50, p99 []Point) {
			for i, v := range vals {
				slices.Sort(v)
				p50 = append(p50, Point{xOf(i), quantile(v, 0.50)})
				p99 = append(p99, Point{xOf(i), quantile(v, 0.99)})
			}
			return p50, p99
		}
		a, b := pct(ttftW)
		ttft.Series = append(ttft.Series, Series{Name: g.name + " p50", Color: g.color, Points: a}, Series{Name: g.name + " p99", Color: g.color, Dash: true, Points: b})
		a, b = pct(itlW)
		itl.Series = append(itl.Series, Series{Name: g.name + " p50", Color: g.color, Points: a}, Series{Name: g.name + " p99", Color: g.color, Dash: true, Points: b})
		rate := func(v []float64) []Point {
			out := make([]Point, n)
			for i := range v {
				out[i] = Point{xOf(i), v[i] / ws}
			}
			return out
		}
		reqs.Series = append(reqs.Series, Series{Name: g.name, Color: g.color, Points: rate(done)})
		toks.Series = append(toks.Series, Series{Name: g.name, Color: g.color, Points: rate(tokens)})
		errs.Series = append(errs.Series, Series{Name: g.name, Color: g.color, Points: rate(failed)})
		infl.Series = append(infl.Series, Series{Name: g.name, Color: g.color, Points: inFlight(g.recs, t0, w, n)})
	}
	charts := []Chart{ttft, itl, reqs, toks, errs, infl}
	return append(charts, gpuCharts(run, t0, idSuffix, titleSuffix)...)
}

// inFlight counts, at the end of every window, the requests that had started and not ended.
func inFlight(recs []*record.Record, t0 time.Time, w time.Duration, n int) []Point {
	type edge struct {
		at time.Time
		d  int
	}
	edges := make([]edge, 0, 2*len(recs))
	for _, r := range recs {
		edges = append(edges, edge{r.Start, +1}, edge{end(r), -1})
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].at.Before(edges[j].at) })
	out := make([]Point, n)
	cur, k := 0, 0
	for i := range n {
		at := t0.Add(time.Duration(i+1) * w)
		for k < len(edges) && !edges[k].at.After(at) {
			cur += edges[k].d
			k++
		}
		out[i] = Point{float64(i+1) * w.Seconds(), float64(cur)}
	}
	return out
}

// gpuCharts draws the GPU samples of the run's timeline, if any.
func gpuCharts(run *Run, t0 time.Time, idSuffix, titleSuffix string) []Chart {
	if len(run.Timeline) == 0 {
		return nil
	}
	util := Chart{ID: "gpu_utilization" + idSuffix, Title: "GPU utilization (%)" + titleSuffix, Kind: KindLine, X: Axis{Label: "s since start"}, Y: Axis{Label: "%"}}
	power := Chart{ID: "gpu_power" + idSuffix, Title: "GPU power (W)" + titleSuffix, Kind: KindLine, X: Axis{Label: "s since start"}, Y: Axis{Label: "W"}}
	idx := map[string]int{}
	for _, tw := range run.Timeline {
		x := tw.Start.Sub(t0).Seconds()
		for _, g := range tw.GPUs {
			i, ok := idx[g.Name]
			if !ok {
				i = len(util.Series)
				idx[g.Name] = i
				util.Series = append(util.Series, Series{Name: g.Name, Color: i})
				power.Series = append(power.Series, Series{Name: g.Name, Color: i})
			}
			util.Series[i].Points = append(util.Series[i].Points, Point{x, g.Utilization})
			power.Series[i].Points = append(power.Series[i].Points, Point{x, g.PowerW})
		}
	}
	return []Chart{util, power}
}

// values returns the sorted values of m over a group's successful requests.
func values(g *group, m metricDef) []float64 {
	var out []float64
	for _, r := range g.recs {
		if !r.OK() {
			continue
		}
		if v, ok := m.value(r); ok && !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// distCharts draws the CDF and the histogram of every distribution metric, one series per
// group of every run, overlaid so runs compare on one axis.
func distCharts(groups []*group) []Chart {
	var charts []Chart
	for _, m := range distMetrics {
		cdf := Chart{ID: m.id + "_cdf", Title: m.title + " CDF", Kind: KindStep, X: Axis{Label: m.unit}, Y: Axis{Label: "fraction ≤ x"}}
		hist := Chart{ID: m.id + "_hist", Title: m.title + " histogram", Kind: KindBar, X: Axis{Label: m.unit}, Y: Axis{Label: "requests"}}
		vals := make([][]float64, len(groups))
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, g := range groups {
			vals[i] = values(g, m)
			if v := vals[i]; len(v) > 0 {
				lo, hi = min(lo, v[0]), max(hi, quantile(v, histTail))
			}
		}
		if math.IsInf(lo, 1) {
			continue
		}
		for i, g := range groups {
			if len(vals[i]) == 0 {
				continue
			}
			cdf.Series = append(cdf.Series, Series{Name: g.name, Color: g.color, Points: cdfPointsOf(vals[i])})
		}
		lo = math.Floor(lo)
		bin := (hi - lo) / histBins
		if m.integer {
			bin = math.Max(1, math.Ceil(bin))
		}
		if bin <= 0 {
			bin = 1
		}
		clipped := false
		for i, g := range groups {
			if len(vals[i]) == 0 {
				continue
			}
			counts := make([]float64, histBins+1)
			for _, v := range vals[i] {
				b := int((v - lo) / bin)
				if b > histBins {
					b, clipped = histBins, true
				}
				counts[max(0, b)]++
			}
			pts := make([]Point, len(counts))
			for b, c := range counts {
				pts[b] = Point{lo + float64(b)*bin, c}
			}
			hist.Series = append(hist.Series, Series{Name: g.name, Color: g.color, Points: pts})
		}
		hist.Bin = bin
		if clipped {
			hist.Title += fmt.Sprintf(" (last bar: ≥ %s %s)", trim(lo+histBins*bin), m.unit)
		}
		charts = append(charts, cdf, hist)
	}
	return charts
}

func trim(v float64) string { return fmt.Sprintf("%.4g", v) }

// cdfPointsOf samples the empirical CDF of sorted values at most cdfPoints times.
func cdfPointsOf(v []float64) []Point {
	n := len(v)
	step := max(1, n/cdfPoints)
	pts := []Point{{v[0], 0}}
	for i := 0; i < n; i += step {
		pts = append(pts, Point{v[i], float64(i+1) / float64(n)})
	}
	return append(pts, Point{v[n-1], 1})
}

// timelineChart draws the content events of the slowest successful streamed requests of a
// run: x is milliseconds since the request reached the proxy, y the events received so far,
// so a stall is a flat stretch and a slow prefill a late start.
func timelineChart(run *Run, idSuffix, titleSuffix string) Chart {
	c := Chart{ID: "token_timelines" + idSuffix, Title: fmt.Sprintf("Token timelines of the %d slowest requests%s", slowestShown, titleSuffix), Kind: KindStep,
		X: Axis{Label: "ms since the request arrived"}, Y: Axis{Label: "content events"}}
	var recs []*record.Record
	for _, r := range run.Records {
		if r.OK() && r.TTFTMs != nil && r.RequestLatencyMs != nil {
			recs = append(recs, r)
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return *recs[i].RequestLatencyMs > *recs[j].RequestLatencyMs })
	for i, r := range recs[:min(slowestShown, len(recs))] {
		t := *r.TTFTMs
		pts := []Point{{0, 0}, {t, 1}}
		for k, gap := range r.InterChunkMs {
			t += gap
			pts = append(pts, Point{t, float64(k + 2)})
		}
		c.Series = append(c.Series, Series{Name: fmt.Sprintf("%s (%.0f ms)", r.RequestID, *r.RequestLatencyMs), Color: i, Points: pts})
	}
	return c
}
