package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
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
	key   string // class, or "class model"
	name  string // key, prefixed by the run's name in a comparison
	color int
	recs  []*record.Record
}

// classColors gives each traffic class its palette index, as the dashboard does
// (ui/static/charts.js CLASS_COLORS): a class has one color on every page and in every PNG.
var classColors = map[string]int{record.ClassLive: 0, record.ClassMirror: 1, record.ClassShadow: 2, record.ClassReplay: 3}

// colorOf is the palette index of group key k, the i-th of the sorted keys: its class's, or for
// other keys (a class with its model) the colors after the classes', in order (charts.js
// colorOf).
func colorOf(k string, i int) int {
	if c, ok := classColors[k]; ok {
		return c
	}
	return (len(classColors) + i) % len(palette)
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
			g = &group{key: k, name: prefix + k, color: colors[k]}
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

// windowsOf runs the run's records through a telemetry/timeline of window w, as the proxy's
// timeline would have cut them live, and returns its windows.
func windowsOf(recs []*record.Record, w time.Duration) []timeline.Window {
	t0, t1 := span(recs)
	done := t1.Add(2 * w)
	tl := timeline.New(timeline.Options{
		Window: w, Keep: done.Sub(t0) + 4*w, Settle: w,
		Models: labelcap.New(1024), MaxValues: 1 << 16, // a report has the time to be exact
		Now: func() time.Time { return done },
	})
	for _, r := range recs {
		tl.Add(r)
	}
	tl.Close(done)
	return tl.Windows(timeline.Query{})
}

// timeCharts draws one run over time, in the timeline's windows (telemetry/timeline documents
// which window each figure lands in): TTFT and ITL p50/p99 per group, request, token and error
// rates, requests in flight, and the GPU when the run recorded a timeline. x is the end of the
// window in seconds since the run's first request.
func timeCharts(run *Run, groups []*group, multiModel bool, idSuffix, titleSuffix string) []Chart {
	t0, t1 := span(run.Records)
	w := windowFor(t1.Sub(t0))
	ws := w.Seconds()
	x := Axis{Label: "s since start"}
	win := fmt.Sprintf(" (%s windows)%s", w, titleSuffix)

	ttft := Chart{ID: "ttft_time" + idSuffix, Title: "TTFT p50 / p99 (ms)" + win, Kind: KindLine, X: x, Y: Axis{Label: "ms"}}
	itl := Chart{ID: "itl_time" + idSuffix, Title: "ITL p50 / p99 (ms)" + win, Kind: KindLine, X: x, Y: Axis{Label: "ms"}}
	reqs := Chart{ID: "request_rate" + idSuffix, Title: "Requests/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "req/s"}}
	toks := Chart{ID: "token_rate" + idSuffix, Title: "Output tokens/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "tok/s"}}
	errs := Chart{ID: "error_rate" + idSuffix, Title: "Errors/s" + win, Kind: KindLine, X: x, Y: Axis{Label: "err/s"}}
	infl := Chart{ID: "in_flight" + idSuffix, Title: "Requests in flight at window ends" + titleSuffix, Kind: KindLine, X: x, Y: Axis{Label: "requests"}}

	windows := windowsOf(run.Records, w)
	byName := map[string]int{}
	for i, g := range groups {
		byName[g.key] = i
	}
	type line struct{ ttft50, ttft99, itl50, itl99, req, tok, err, infl []Point }
	lines := make([]line, len(groups))
	nan := math.NaN()
	// The timeline keeps only windows that saw something; every window between the first and
	// the run's end is drawn, an idle one with zero rates and no latency, so that a line breaks
	// (or drops to zero) across a stretch without traffic instead of joining its two ends.
	all := make([]timeline.Window, 0, len(windows))
	for i, win := range windows {
		if i > 0 {
			for s := windows[i-1].Start.Add(w); s.Before(win.Start); s = s.Add(w) {
				all = append(all, timeline.Window{Start: s})
			}
		}
		all = append(all, win)
	}
	for _, win := range all {
		if !win.Start.Before(t1) {
			break // the windows Close made after the last response
		}
		xv := win.Start.Add(w).Sub(t0).Seconds()
		seen := make([]bool, len(groups))
		for _, s := range win.Series {
			k := s.Class
			if multiModel {
				k += " " + s.Model
			}
			i, ok := byName[k]
			if !ok {
				continue
			}
			seen[i] = true
			l := &lines[i]
			q := func(v *timeline.Quantiles) (float64, float64) {
				if v == nil {
					return nan, nan
				}
				return v.P50, v.P99
			}
			a, b := q(s.TTFTMs)
			l.ttft50, l.ttft99 = append(l.ttft50, Point{xv, a}), append(l.ttft99, Point{xv, b})
			a, b = q(s.ITLMs)
			l.itl50, l.itl99 = append(l.itl50, Point{xv, a}), append(l.itl99, Point{xv, b})
			l.req = append(l.req, Point{xv, s.RequestRate})
			l.tok = append(l.tok, Point{xv, s.OutputTokensPerSecond})
			l.err = append(l.err, Point{xv, float64(s.Errors) / ws})
			l.infl = append(l.infl, Point{xv, float64(s.InFlight)})
		}
		// A window where a group had nothing: no latency, zero rates.
		for i, ok := range seen {
			if ok {
				continue
			}
			l := &lines[i]
			l.ttft50, l.ttft99 = append(l.ttft50, Point{xv, nan}), append(l.ttft99, Point{xv, nan})
			l.itl50, l.itl99 = append(l.itl50, Point{xv, nan}), append(l.itl99, Point{xv, nan})
			for _, p := range []*[]Point{&l.req, &l.tok, &l.err, &l.infl} {
				*p = append(*p, Point{xv, 0})
			}
		}
	}
	for i, g := range groups {
		l := lines[i]
		ttft.Series = append(ttft.Series, Series{Name: g.name + " p50", Color: g.color, Points: l.ttft50}, Series{Name: g.name + " p99", Color: g.color, Dash: true, Points: l.ttft99})
		itl.Series = append(itl.Series, Series{Name: g.name + " p50", Color: g.color, Points: l.itl50}, Series{Name: g.name + " p99", Color: g.color, Dash: true, Points: l.itl99})
		reqs.Series = append(reqs.Series, Series{Name: g.name, Color: g.color, Points: l.req})
		toks.Series = append(toks.Series, Series{Name: g.name, Color: g.color, Points: l.tok})
		errs.Series = append(errs.Series, Series{Name: g.name, Color: g.color, Points: l.err})
		infl.Series = append(infl.Series, Series{Name: g.name, Color: g.color, Points: l.infl})
	}
	charts := []Chart{ttft, itl, reqs, toks, errs, infl}
	return append(charts, gpuCharts(run, t0, idSuffix, titleSuffix)...)
}

// gpuCharts draws the GPU figures of the timeline the run recorded, if any.
func gpuCharts(run *Run, t0 time.Time, idSuffix, titleSuffix string) []Chart {
	util := Chart{ID: "gpu_utilization" + idSuffix, Title: "GPU utilization (%)" + titleSuffix, Kind: KindLine, X: Axis{Label: "s since start"}, Y: Axis{Label: "%"}}
	power := Chart{ID: "gpu_power" + idSuffix, Title: "GPU power (W)" + titleSuffix, Kind: KindLine, X: Axis{Label: "s since start"}, Y: Axis{Label: "W"}}
	idx := map[int]int{}
	for _, tw := range run.Timeline {
		x := tw.Start.Add(time.Duration(tw.DurationMs * float64(time.Millisecond))).Sub(t0).Seconds()
		for _, g := range tw.GPUs {
			i, ok := idx[g.Index]
			if !ok {
				i = len(util.Series)
				idx[g.Index] = i
				name := fmt.Sprintf("gpu %d", g.Index)
				if g.Name != "" {
					name = fmt.Sprintf("%d: %s", g.Index, g.Name)
				}
				util.Series = append(util.Series, Series{Name: name, Color: i})
				power.Series = append(power.Series, Series{Name: name, Color: i})
			}
			val := func(p *float64) float64 {
				if p == nil {
					return math.NaN()
				}
				return *p
			}
			util.Series[i].Points = append(util.Series[i].Points, Point{x, val(g.UtilPercent)})
			power.Series[i].Points = append(power.Series[i].Points, Point{x, val(g.PowerW)})
		}
	}
	if len(util.Series) == 0 {
		return nil
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
