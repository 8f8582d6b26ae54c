package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

var nan = math.NaN()

func (m measurement) reqPerS() float64    { return float64(m.requests) / m.elapsed.Seconds() }
func (m measurement) eventsPerS() float64 { return float64(m.events) / m.elapsed.Seconds() }

// pct is the p-th percentile (nearest rank) of ds; zero for none.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return nan
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// report collects the runs and renders them as markdown.
type report struct {
	o                     options
	started               time.Time
	elapsed               time.Duration
	loadBefore, loadAfter string
	order                 []scenario
	runs                  map[string]map[string][]measurement // scenario → variant → by repetition
	idle                  map[string][]idleMeasurement
}

func (r *report) add(s scenario, variant string, rep int, m measurement) {
	if r.runs == nil {
		r.runs = map[string]map[string][]measurement{}
	}
	if r.runs[s.name] == nil {
		r.runs[s.name] = map[string][]measurement{}
		r.order = append(r.order, s)
	}
	runs := r.runs[s.name][variant]
	for len(runs) <= rep {
		runs = append(runs, measurement{cpu: nan})
	}
	runs[rep] = m
	r.runs[s.name][variant] = runs
}

func (r *report) addIdle(variant string, m idleMeasurement) {
	if r.idle == nil {
		r.idle = map[string][]idleMeasurement{}
	}
	r.idle[variant] = append(r.idle[variant], m)
}

// metric is one row of a scenario's table: its value for a run, given the direct run of the
// same repetition (zero value when there is none).
type metric struct {
	name string
	// proxied marks figures that exist only for a proxy (its CPU time, what the hop adds).
	proxied bool
	value   func(m, direct measurement) float64
}

var metrics = []metric{
	{name: "requests/s", value: func(m, _ measurement) float64 { return m.reqPerS() }},
	{name: "events/s", value: func(m, _ measurement) float64 { return m.eventsPerS() }},
	{name: "proxy CPU s / 1,000 requests", proxied: true, value: func(m, _ measurement) float64 {
		return m.cpu / float64(m.requests) * 1000
	}},
	{name: "proxy CPU s / 100,000 tokens", proxied: true, value: func(m, _ measurement) float64 {
		return m.cpu / float64(m.requests*tokensPerRequest) * 1e5
	}},
	{name: "proxy CPU µs / event", proxied: true, value: func(m, _ measurement) float64 {
		return m.cpu / float64(m.events) * 1e6
	}},
	{name: "proxy read+write syscalls / event", proxied: true, value: func(m, _ measurement) float64 {
		return float64(m.syscalls) / float64(m.events)
	}},
	{name: "TTFT p50 (ms)", value: func(m, _ measurement) float64 { return ms(pct(m.ttfts, 50)) }},
	{name: "TTFT p99 (ms)", value: func(m, _ measurement) float64 { return ms(pct(m.ttfts, 99)) }},
	{name: "TTFT p50 added by the hop (ms)", proxied: true, value: func(m, d measurement) float64 {
		if len(d.ttfts) == 0 {
			return nan
		}
		return ms(pct(m.ttfts, 50)) - ms(pct(d.ttfts, 50))
	}},
	{name: "TTFT p99 added by the hop (ms)", proxied: true, value: func(m, d measurement) float64 {
		if len(d.ttfts) == 0 {
			return nan
		}
		return ms(pct(m.ttfts, 99)) - ms(pct(d.ttfts, 99))
	}},
}

// tokensPerRequest is set from -tokens: every response carries exactly that many (the mock
// runs without early stops).
var tokensPerRequest = 128

// values is a metric's value per repetition for one variant.
func (r *report) values(s, variant string, mt metric) []float64 {
	runs := r.runs[s][variant]
	direct := r.runs[s]["direct"]
	out := make([]float64, len(runs))
	for i, m := range runs {
		if mt.proxied && variant == "direct" {
			out[i] = nan
			continue
		}
		var d measurement
		if i < len(direct) {
			d = direct[i]
		}
		out[i] = mt.value(m, d)
	}
	return out
}

// ratios is variant / caddy per repetition: the pairs ran back to back.
func (r *report) ratios(s, variant string, mt metric) []float64 {
	a, c := r.values(s, variant, mt), r.values(s, "caddy", mt)
	out := make([]float64, min(len(a), len(c)))
	for i := range out {
		out[i] = a[i] / c[i]
	}
	return out
}

func (r *report) markdown() string {
	tokensPerRequest = r.o.tokens
	var b strings.Builder
	var names []string
	for _, v := range r.o.variants {
		names = append(names, v.name)
	}
	var compared []string
	for _, n := range names {
		if n != "direct" && n != "caddy" {
			compared = append(compared, n)
		}
	}
	how := "interleaved"
	if r.o.together {
		how = "the variants of a scenario loaded at the same time (-together), each with the scenario's concurrency"
	}
	fmt.Fprintf(&b, "`%s` — %s, %d CPUs: %d repetitions × %v per scenario and variant, %s; load average %s before, %s after.\n\n",
		strings.Join(os.Args, " "), r.elapsed.Round(time.Second), runtime.NumCPU(), r.o.reps, r.o.duration, how, r.loadBefore, r.loadAfter)
	for _, s := range r.order {
		fmt.Fprintf(&b, "#### %s — %s\n\n", s.name, s.what)
		b.WriteString("| metric |")
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", n)
		}
		for _, n := range compared {
			fmt.Fprintf(&b, " %s / caddy (min–max) |", n)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(names)+len(compared)) + "\n")
		for _, mt := range metrics {
			if !s.stream && strings.HasPrefix(mt.name, "TTFT") {
				continue
			}
			fmt.Fprintf(&b, "| %s |", mt.name)
			for _, n := range names {
				fmt.Fprintf(&b, " %s |", num(median(r.values(s.name, n, mt))))
			}
			for _, n := range compared {
				rs := r.ratios(s.name, n, mt)
				fmt.Fprintf(&b, " %s (%s–%s) |", ratio(median(rs)), ratio(minOf(rs)), ratio(maxOf(rs)))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "| errors (all runs) |")
		for _, n := range names {
			e := 0
			for _, m := range r.runs[s.name][n] {
				e += m.errors
			}
			fmt.Fprintf(&b, " %d |", e)
		}
		b.WriteString(strings.Repeat(" |", len(compared)) + "\n\n")
	}
	if len(r.idle) > 0 {
		fmt.Fprintf(&b, "#### idle — %d open streams held by the upstream (headers sent, no token yet); fresh proxy per run, %d runs, GC before each reading\n\n",
			r.o.idleStreams, r.o.idleReps)
		b.WriteString("| memory per open stream | caddy |")
		for _, n := range compared {
			fmt.Fprintf(&b, " %s | %s − caddy |", n, n)
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---|---|", len(compared)) + "\n")
		for _, row := range []struct {
			name string
			f    func(idleMeasurement) float64
		}{
			{"RSS (KiB)", idleMeasurement.rssPerStream},
			{"Go heap + stacks in use (KiB)", idleMeasurement.goPerStream},
		} {
			c := median(mapIdle(r.idle["caddy"], row.f)) / 1024
			fmt.Fprintf(&b, "| %s | %s |", row.name, num(c))
			for _, n := range compared {
				v := median(mapIdle(r.idle[n], row.f)) / 1024
				fmt.Fprintf(&b, " %s | %+.2f |", num(v), v-c)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if slices.Contains(names, "llmtap") {
		r.floors(&b)
	}
	return b.String()
}

// floors checks issue 11's floors for llmtap against plain Caddy of the same run.
func (r *report) floors(b *strings.Builder) {
	b.WriteString("Floors (llmtap / caddy, median of per-pair ratios):\n\n")
	check := func(what string, v float64, ok bool) {
		verdict := "met"
		if math.IsNaN(v) {
			verdict = "not measured"
		} else if !ok {
			verdict = "NOT met"
		}
		fmt.Fprintf(b, "- %s: %s — %s\n", what, ratio(v), verdict)
	}
	byName := func(name string) metric {
		i := slices.IndexFunc(metrics, func(m metric) bool { return m.name == name })
		return metrics[i]
	}
	med := func(s, m string) float64 { return median(r.ratios(s, "llmtap", byName(m))) }
	v := med("stream-sat", "proxy CPU s / 100,000 tokens")
	check("proxy CPU per streamed token ≤ 1.10×", v, v <= 1.10)
	v = med("stream-sat", "requests/s")
	check("streams/s at saturation ≥ 0.95×", v, v >= 0.95)
	v = med("stream-sat", "events/s")
	check("events/s at saturation ≥ 0.95×", v, v >= 0.95)
	for _, s := range []string{"stream-64", "stream-256"} {
		for _, m := range []string{"TTFT p50 (ms)", "TTFT p99 (ms)"} {
			v = med(s, m)
			check(fmt.Sprintf("%s %s within 5%% (median of the per-pair ratios)", s, m), v, v <= 1.05)
		}
		// A p99 of one 3 s repetition rests on its few slowest streams; the percentile of every
		// repetition's streams together rests on five times as many.
		for _, p := range []float64{50, 99} {
			v = r.pooledTTFT(s, "llmtap", p) / r.pooledTTFT(s, "caddy", p)
			check(fmt.Sprintf("%s TTFT p%v within 5%% (pooled over all repetitions)", s, p), v, v <= 1.05)
		}
	}
	if len(r.idle) > 0 {
		extra := (median(mapIdle(r.idle["llmtap"], idleMeasurement.rssPerStream)) -
			median(mapIdle(r.idle["caddy"], idleMeasurement.rssPerStream))) / 1024
		verdict := "met"
		if extra > 8 {
			verdict = "NOT met"
		}
		fmt.Fprintf(b, "- extra RSS per open stream ≤ 8 KiB: %+.2f KiB — %s\n", extra, verdict)
	}
	b.WriteString("\n")
}

// pooledTTFT is the p-th percentile of the client's TTFT over every repetition of scenario s
// for variant v, in ms; NaN when it did not run.
func (r *report) pooledTTFT(s, v string, p float64) float64 {
	var all []time.Duration
	for _, m := range r.runs[s][v] {
		all = append(all, m.ttfts...)
	}
	if len(all) == 0 {
		return nan
	}
	return ms(pct(all, p))
}

func mapIdle(runs []idleMeasurement, f func(idleMeasurement) float64) []float64 {
	out := make([]float64, len(runs))
	for i, m := range runs {
		out[i] = f(m)
	}
	return out
}

func minOf(xs []float64) float64 {
	m := nan
	for _, x := range xs {
		if math.IsNaN(m) || x < m {
			m = x
		}
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := nan
	for _, x := range xs {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}

// num prints a figure with about three significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "—"
	case a >= 1000:
		return thousands(int64(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.3f", v)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
