// Package fidelity judges whether a replay reproduced the recording it came from: it sets the
// replay's request records beside the recording's and compares the arrival process (burstiness
// and the rate over time), the input and output lengths, the outcome distributions (TTFT, ITL,
// request latency) and the error rate, each against an equivalence margin, and ends in one
// verdict: reproduced, not reproduced, or not enough requests.
package fidelity

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/compare"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Verdicts.
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	NotEnough     = "not enough requests"
)

// Defaults of Options.
const (
	DefaultAlpha         = 0.05
	DefaultMargin        = 0.10
	DefaultTailMargin    = 0.25
	DefaultMarginMs      = 2.0
	DefaultErrorMargin   = 0.02
	DefaultArrivalMargin = 0.25
	DefaultMinRateCorr   = 0.8
	DefaultWindows       = 20
	DefaultPrefixMargin  = 0.05
	// MinArrivals is the fewest requests a side needs for its arrival process to be compared.
	MinArrivals = 50
)

// Options are the equivalence margins of a fidelity verdict.
type Options struct {
	// Alpha bounds the chance that any interval comparison declares a difference that is not
	// there; it is split evenly over the comparisons (Bonferroni). Default 0.05.
	Alpha float64
	// Margin is the equivalence margin of the median and 90th percentile ratios (replayed /
	// recorded): within 1±Margin they count as the same. Default 0.10.
	Margin float64
	// TailMargin is the equivalence margin of the 99th percentile ratios. Default 0.25.
	TailMargin float64
	// MarginMs is the smallest difference of a time metric, in ms, that counts at all, so a
	// constant offset between where the two sides were measured is not a verdict. Default 2; a
	// negative value means none.
	MarginMs float64
	// ErrorMargin is the equivalence margin of the error rates' difference (0.01 is one
	// percentage point). Default 0.02.
	ErrorMargin float64
	// PrefixMargin is the equivalence margin of the difference of the prefix reuse shares (the
	// share of prompt blocks seen in an earlier request). Default 0.05.
	PrefixMargin float64
	// ArrivalMargin is the equivalence margin of the ratio of the inter-arrival gaps'
	// coefficients of variation. Default 0.25.
	ArrivalMargin float64
	// MinRateCorr is the smallest correlation of the per-window request rates that counts as
	// the same arrival shape. Default 0.8.
	MinRateCorr float64
	// Window is the width of the rate windows on the recording's clock; 0 divides the
	// recording's span into DefaultWindows windows.
	Window time.Duration
	// Speedup is the replay's speedup: the replay's clock is multiplied by it before the
	// arrival process is compared. Default 1.
	Speedup float64
	// RequireTails makes a 99th percentile the requests cannot bound hold the verdict at "not
	// enough requests". Without it such a tail is listed beside the verdict (with the requests
	// that would bound it) but does not hold it back: bounding a p99 at the verdict's level
	// takes about a thousand requests a side, more than many recordings hold. A tail that is
	// bounded and differs is "not reproduced" either way.
	RequireTails bool
}

func (o Options) withDefaults() Options {
	def := func(v *float64, d float64) {
		if !(*v > 0) {
			*v = d
		}
	}
	def(&o.Alpha, DefaultAlpha)
	def(&o.Margin, DefaultMargin)
	def(&o.TailMargin, DefaultTailMargin)
	def(&o.ErrorMargin, DefaultErrorMargin)
	def(&o.PrefixMargin, DefaultPrefixMargin)
	def(&o.ArrivalMargin, DefaultArrivalMargin)
	def(&o.MinRateCorr, DefaultMinRateCorr)
	def(&o.Speedup, 1)
	if o.MarginMs < 0 {
		o.MarginMs = 0
	} else if o.MarginMs == 0 {
		o.MarginMs = DefaultMarginMs
	}
	return o
}

// Validate checks the options: fractions in [0, 1) (0 means the default), the speedup and
// window not negative.
func (o Options) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"alpha", o.Alpha}, {"margin", o.Margin}, {"tail-margin", o.TailMargin}, {"error-margin", o.ErrorMargin}, {"prefix-margin", o.PrefixMargin}, {"min-rate-corr", o.MinRateCorr}} {
		if !(f.v >= 0 && f.v < 1) {
			errs = append(errs, fmt.Errorf("%s %v: must be in [0, 1) (0 means the default)", f.name, f.v))
		}
	}
	if !(o.ArrivalMargin >= 0) || math.IsInf(o.ArrivalMargin, 0) {
		errs = append(errs, fmt.Errorf("arrival-margin %v: must be a positive number (0 means the default)", o.ArrivalMargin))
	}
	if math.IsNaN(o.MarginMs) || math.IsInf(o.MarginMs, 0) {
		errs = append(errs, fmt.Errorf("margin-ms %v: must be a number", o.MarginMs))
	}
	if !(o.Speedup >= 0) || math.IsInf(o.Speedup, 0) || o.Window < 0 {
		errs = append(errs, fmt.Errorf("speedup %v and window %v: must not be negative", o.Speedup, o.Window))
	}
	return errors.Join(errs...)
}

// Side is one run: its records and where they were measured.
type Side struct {
	// Name labels the run.
	Name string
	// Where says where the records were measured: "proxy" (the llmtap proxy's recorder) or
	// "client" (the export of llmtap bench or replay, or of AIPerf).
	Where string
	// Records are the run's request records.
	Records []*record.Record
	// HashIDs are the content-derived block ids of each request's prompt, in time order, from
	// the run's trace file; nil when no trace was given, and prefix reuse is then not compared.
	HashIDs [][]int64
}

// Comparison is one metric of the verdict.
type Comparison struct {
	compare.Result
	// KS is the two-sample Kolmogorov–Smirnov distance of the metric's distributions, reported
	// beside the quantile ratios (NaN where it does not apply).
	KS float64
	// Interval is false for comparisons judged by their point estimate (the arrival process).
	Interval bool
	// Tail is set on the 99th percentile comparisons.
	Tail bool
}

// Verdict is the fidelity verdict.
type Verdict struct {
	// Outcome is Reproduced, NotReproduced or NotEnough.
	Outcome string
	// Diverged names the comparison furthest from equal, in margins.
	Diverged string
	// Level is the confidence level of each interval comparison.
	Level float64
	// Recorded and Replayed count the requests of each side.
	Recorded, Replayed int
	// Measured says where each side was measured and how a difference of place is allowed for.
	Measured string
	// Comparisons are the metrics compared, in a fixed order.
	Comparisons []Comparison
	// NotCompared lists what was not compared, and why.
	NotCompared []string
	// Unbounded lists the tail comparisons the requests could not bound and that did not hold
	// the verdict back (Options.RequireTails unset).
	Unbounded []string
}

// Judge compares the replayed side with the recorded one.
func Judge(recorded, replayed Side, o Options) Verdict {
	o = o.withDefaults()
	v := Verdict{Recorded: len(recorded.Records), Replayed: len(replayed.Records)}
	v.Measured = measured(recorded.Where, replayed.Where, o.MarginMs)
	var cs []Comparison
	cs = append(cs, arrivals(recorded.Records, replayed.Records, o)...)
	metrics := []struct {
		name   string
		tokens bool
		get    func(*record.Record) (float64, bool)
	}{
		{"input_tokens", true, func(r *record.Record) (float64, bool) { return float64(r.InputTokens), r.InputTokens > 0 }},
		{"output_tokens", true, func(r *record.Record) (float64, bool) { return float64(r.OutputTokens), r.Error == "" }},
		{"ttft_ms", false, func(r *record.Record) (float64, bool) { return deref(r.TTFTMs) }},
		{"itl_ms", false, func(r *record.Record) (float64, bool) { return deref(r.ITLMs) }},
		{"request_latency_ms", false, func(r *record.Record) (float64, bool) { return deref(r.RequestLatencyMs) }},
	}
	qs := []struct {
		q    float64
		name string
	}{{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}}
	prefix := recorded.HashIDs != nil && replayed.HashIDs != nil
	ta, tb := thinkTimes(recorded.Records, 1), thinkTimes(replayed.Records, o.Speedup)
	think := len(ta) > 0 && len(tb) > 0
	tests := len(metrics)*len(qs) + 1
	if prefix {
		tests++
	}
	if think {
		tests += 2 // its median and 90th percentile
	}
	alpha := o.Alpha / float64(tests)
	v.Level = 1 - alpha
	for _, m := range metrics {
		a, b := values(recorded.Records, m.get), values(replayed.Records, m.get)
		abs := o.MarginMs
		if m.tokens {
			abs = 0.5 // counts differ by whole tokens
		}
		ks := math.NaN()
		for _, q := range qs {
			margin := o.Margin
			if q.q == 0.99 {
				margin = o.TailMargin
			}
			r := compare.Quantile(m.name+" "+q.name, a, b, q.q, alpha, margin, abs)
			if math.IsNaN(ks) { // a and b are sorted now
				ks = compare.KS(a, b)
			}
			cs = append(cs, Comparison{Result: r, KS: ks, Interval: true, Tail: q.q == 0.99})
		}
	}
	errs := func(rs []*record.Record) int {
		n := 0
		for _, r := range rs {
			if r.Error != "" {
				n++
			}
		}
		return n
	}
	cs = append(cs, Comparison{Result: compare.Rates("error_rate", errs(recorded.Records), len(recorded.Records),
		errs(replayed.Records), len(replayed.Records), alpha, o.ErrorMargin), KS: math.NaN(), Interval: true})
	if prefix {
		sa, na := reuse(recorded.HashIDs)
		sb, nb := reuse(replayed.HashIDs)
		cs = append(cs, Comparison{Result: compare.Rates("prefix_reuse", sa, na, sb, nb, alpha, o.PrefixMargin), KS: math.NaN(), Interval: true})
	} else {
		v.NotCompared = append(v.NotCompared, "prefix reuse (give both sides' trace files with hash_ids: --compare-traces)")
	}
	if think {
		ks := math.NaN()
		for _, q := range qs[:2] {
			r := compare.Quantile("think_time_ms "+q.name, ta, tb, q.q, alpha, o.Margin, o.MarginMs)
			if math.IsNaN(ks) {
				ks = compare.KS(ta, tb)
			}
			cs = append(cs, Comparison{Result: r, KS: ks, Interval: true})
		}
	} else {
		v.NotCompared = append(v.NotCompared, "session think time (no session with two turns on both sides: record with session_header)")
	}
	v.Comparisons = cs
	v.Outcome, v.Diverged = combine(cs, o.RequireTails)
	if !o.RequireTails {
		for _, c := range cs {
			if c.Tail && c.Count > 0 && c.Outcome == compare.NotEnough {
				v.Unbounded = append(v.Unbounded, c.Name)
			}
		}
	}
	return v
}

// combine is not reproduced when any comparison found a difference (either way), not enough
// requests when any could not tell (a tail only when tails are required), and reproduced when
// every other one is the same. The metric that diverged most is the one furthest from equal,
// in margins.
func combine(cs []Comparison, tails bool) (outcome, diverged string) {
	worst := -1.0
	var differ, unsure, same int
	for _, c := range cs {
		if c.Count == 0 {
			continue
		}
		switch c.Outcome {
		case compare.Better, compare.Worse:
			differ++
		case compare.NotEnough:
			if tails || !c.Tail {
				unsure++
			}
		default:
			same++
		}
		if d := c.Divergence(); d > worst {
			worst, diverged = d, c.Name
		}
	}
	switch {
	case differ > 0:
		return NotReproduced, diverged
	case unsure > 0 || same == 0:
		return NotEnough, diverged
	}
	return Reproduced, diverged
}

func deref(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

func values(rs []*record.Record, get func(*record.Record) (float64, bool)) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := get(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// thinkTimes returns the think times of the sessions of rs, in ms: for every turn after a
// session's first (in order of arrival), its start minus the end of the previous turn (its
// start plus duration_ms), 0 when it started earlier. A replay's are multiplied by its speedup,
// which divided the recorded delays.
func thinkTimes(rs []*record.Record, speedup float64) []float64 {
	bySession := map[string][]*record.Record{}
	for _, r := range rs {
		if r.SessionID != "" {
			bySession[r.SessionID] = append(bySession[r.SessionID], r)
		}
	}
	var out []float64
	for _, turns := range bySession {
		slices.SortFunc(turns, func(a, b *record.Record) int { return a.Start.Compare(b.Start) })
		for k := 1; k < len(turns); k++ {
			end := turns[k-1].Start.Add(time.Duration(turns[k-1].DurationMs * float64(time.Millisecond)))
			out = append(out, max(float64(turns[k].Start.Sub(end))/float64(time.Millisecond), 0)*speedup)
		}
	}
	return out
}

// measured says where each side was measured.
func measured(rec, rep string, marginMs float64) string {
	if rec == rep {
		return fmt.Sprintf("both sides measured at the %s", rec)
	}
	return fmt.Sprintf("recording measured at the %s, replay at the %s: the client's times include the hop through the proxy; a constant offset up to %g ms (--margin-ms) is not counted", rec, rep, marginMs)
}

// arrivals compares the arrival processes: the coefficient of variation of the inter-arrival
// gaps (a ratio, by its point estimate) and the correlation of the per-window request counts.
// The schedule of a replay is the recording's own, so what differs is the sender's and the
// meter's lag, not sampling: these two are judged by their point estimates.
func arrivals(rec, rep []*record.Record, o Options) []Comparison {
	a, b := starts(rec, 1), starts(rep, o.Speedup)
	cv := Comparison{Result: compare.Result{Name: "arrival_gap_cv", Margin: o.ArrivalMargin, Outcome: compare.NotEnough,
		Low: math.Inf(-1), High: math.Inf(1)}, KS: math.NaN()}
	enough := len(a) >= MinArrivals && len(b) >= MinArrivals
	if enough {
		ca, cb := gapCV(a), gapCV(b)
		cv.Count, cv.Base, cv.Other = len(a)-1, ca, cb
		if ca > 0 {
			cv.Estimate = cb / ca
			cv.Low, cv.High = cv.Estimate, cv.Estimate
			switch {
			case cv.Estimate > 1+o.ArrivalMargin:
				cv.Outcome = compare.Worse
			case cv.Estimate < 1/(1+o.ArrivalMargin):
				cv.Outcome = compare.Better
			default:
				cv.Outcome = compare.Same
			}
		}
	}
	corr := Comparison{Result: compare.Result{Name: "arrival_rate_corr", Margin: 1 - o.MinRateCorr, Difference: true,
		Outcome: compare.NotEnough, Low: math.Inf(-1), High: math.Inf(1)}, KS: math.NaN()}
	if enough {
		w := o.Window
		if w <= 0 {
			w = (a[len(a)-1] - a[0]) / DefaultWindows
		}
		if w > 0 {
			ca, cb := counts(a, w), counts(b, w)
			n := max(len(ca), len(cb))
			ca, cb = pad(ca, n), pad(cb, n)
			if n >= 3 {
				// A constant series has no correlation: it counts as none.
				r, ok := pearson(ca, cb)
				// Estimate is the correlation's shortfall from 1, judged against 1 − MinRateCorr.
				corr.Count, corr.Base, corr.Other = n, 1, r
				corr.Estimate = r - 1
				corr.Low, corr.High = corr.Estimate, corr.Estimate
				// A flat rate has nothing to correlate: windows whose counts differ by no more
				// than counting noise are the same shape whatever r says.
				if (ok && r >= o.MinRateCorr) || noise(ca, cb) <= 2 {
					corr.Outcome = compare.Same
				} else {
					corr.Outcome = compare.Better // lower than the least that counts
				}
			}
		}
	}
	return []Comparison{cv, corr}
}

// starts are the records' start times from the first, in order, on the recording's clock.
func starts(rs []*record.Record, speedup float64) []time.Duration {
	if len(rs) == 0 {
		return nil
	}
	t0 := rs[0].Start
	for _, r := range rs {
		if r.Start.Before(t0) {
			t0 = r.Start
		}
	}
	out := make([]time.Duration, len(rs))
	for i, r := range rs {
		out[i] = time.Duration(float64(r.Start.Sub(t0)) * speedup)
	}
	slices.Sort(out)
	return out
}

func gapCV(ts []time.Duration) float64 {
	n := float64(len(ts) - 1)
	var sum, sq float64
	for i := 1; i < len(ts); i++ {
		g := float64(ts[i] - ts[i-1])
		sum += g
		sq += g * g
	}
	mean := sum / n
	if mean <= 0 {
		return 0
	}
	return math.Sqrt(max(0, sq/n-mean*mean)) / mean
}

func counts(ts []time.Duration, w time.Duration) []float64 {
	out := make([]float64, int(ts[len(ts)-1]/w)+1)
	for _, t := range ts {
		out[int(t/w)]++
	}
	return out
}

// noise is Σ(a−b)²/Σ(a+b) over the windows: about 1 when the counts differ as two Poisson
// counts of one rate do, much more when the replay's rate over time has another shape.
func noise(a, b []float64) float64 {
	var d, s float64
	for i := range a {
		d += (a[i] - b[i]) * (a[i] - b[i])
		s += a[i] + b[i]
	}
	if s == 0 {
		return 0
	}
	return d / s
}

func pad(xs []float64, n int) []float64 {
	for len(xs) < n {
		xs = append(xs, 0)
	}
	return xs
}

func pearson(a, b []float64) (float64, bool) {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma, mb = ma/n, mb/n
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	if saa == 0 || sbb == 0 {
		return 0, false
	}
	return sab / math.Sqrt(saa*sbb), true
}

// Write prints the verdict as a table and a closing line.
func (v Verdict) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fidelity: %d recorded requests, %d replayed; %s\n", v.Recorded, v.Replayed, v.Measured)
	fmt.Fprintf(&b, "%-26s %12s %12s %9s %21s %7s %6s  %s\n", "metric", "recorded", "replayed", "ratio", "interval", "margin", "KS D", "verdict")
	for _, c := range v.Comparisons {
		est, iv := "-", "-"
		if c.Count > 0 {
			est = fmt.Sprintf("%.3f", c.Estimate)
			if c.Difference {
				est = fmt.Sprintf("%+.3f", c.Estimate)
			}
			if c.Interval {
				iv = fmt.Sprintf("[%s, %s]", num(c.Low), num(c.High))
			}
		}
		ks := "-"
		if !math.IsNaN(c.KS) {
			ks = fmt.Sprintf("%.3f", c.KS)
		}
		margin := fmt.Sprintf("±%.3g", c.Margin)
		fmt.Fprintf(&b, "%-26s %12.4g %12.4g %9s %21s %7s %6s  %s\n", c.Name, c.Base, c.Other, est, iv, margin, ks, word(c.Outcome))
	}
	for _, n := range v.NotCompared {
		fmt.Fprintf(&b, "not compared: %s\n", n)
	}
	if len(v.Unbounded) > 0 {
		fmt.Fprintf(&b, "not bounded at this size, not held against the verdict (--require-tails holds it): %s\n", strings.Join(v.Unbounded, ", "))
	}
	fmt.Fprintf(&b, "verdict: %s (each interval at %.4f%%; diverged most: %s)\n", v.Outcome, 100*v.Level, v.Diverged)
	_, err := io.WriteString(w, b.String())
	return err
}

// word is a comparison's outcome as a replay's: the replay is higher or lower than the
// recording, neither better nor worse.
func word(outcome string) string {
	switch outcome {
	case compare.Worse:
		return "higher"
	case compare.Better:
		return "lower"
	}
	return outcome
}

func num(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.3f", x)
}

// reuse counts the prompt blocks (hash ids) seen in an earlier request of the run, and all
// blocks. The blocks are not independent draws, so the interval of their share is a guide
// rather than exact.
func reuse(ids [][]int64) (seen, total int) {
	known := map[int64]bool{}
	for _, req := range ids {
		for _, h := range req {
			if known[h] {
				seen++
			}
			total++
		}
		for _, h := range req {
			known[h] = true
		}
	}
	return seen, total
}
