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

	"gonum.org/v1/gonum/stat/distuv"

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
	// Note says how the records were found when it is not plain (AtProxy: the replay's
	// requests found in an llmtap proxy's records); the verdict's first line carries it.
	Note string
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
	// Level is the confidence level of each interval, at which a difference is declared
	// (Alpha divided over Tests comparisons).
	Level float64
	// SameLevel is the level of the intervals that must lie within the margin for a
	// comparison to be the same (1 − 2·Alpha: one-sided Alpha on each side of the margin).
	SameLevel float64
	// Tests is the number of comparisons that can declare a difference.
	Tests int
	// Paired is set when the two sides are the same requests in the same order, compared
	// request by request.
	Paired bool
	// Recorded and Replayed count the requests of each side.
	Recorded, Replayed int
	// Labels name the two sides in Write when neither is a replay of the other (two benchmark
	// runs compared): the base's and the other's; empty, they are "recorded" and "replayed".
	Labels [2]string
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
//
// Each comparison ends better/worse (a difference), same, or not enough, at two levels: a
// difference is declared at Alpha divided over every comparison that can declare one
// (Bonferroni: a false "not reproduced" has a chance of at most Alpha), sameness at Alpha each,
// one-sided on each side of the margin (the verdict is "reproduced" only when every comparison
// is the same, so a false "reproduced" of a replay that differs in any one has a chance of at
// most Alpha without dividing it: an intersection–union test). The intervals allow for
// requests that are not independent (compare.Inflation).
func Judge(recorded, replayed Side, o Options) Verdict {
	o = o.withDefaults()
	recs, reps := byStart(recorded.Records), byStart(replayed.Records)
	v := Verdict{Recorded: len(recs), Replayed: len(reps)}
	v.Measured = measured(recorded.Where, replayed.Where, o.MarginMs)
	if replayed.Note != "" {
		v.Measured += " (replay: " + replayed.Note + ")"
	}
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
	// Prefix reuse is compared when both sides' traces hold blocks; a trace without any is
	// not compared (said so), never a comparison that cannot decide.
	_, nra := reuse(recorded.HashIDs)
	_, nrb := reuse(replayed.HashIDs)
	prefix := nra > 0 && nrb > 0
	ta, tb := thinkTimes(recs, 1), thinkTimes(reps, o.Speedup)
	think := len(ta) > 0 && len(tb) > 0
	// The comparisons that can declare a difference: the quantiles, the error rate, the two
	// arrival comparisons and think time's two quantiles. Prefix reuse is a property of the
	// prompts sent, judged by its value, and takes no share.
	tests := len(metrics)*len(qs) + 1 + 2
	if think {
		tests += 2
	}
	lv := compare.Levels{Differ: o.Alpha / float64(tests), Same: o.Alpha}
	v.Level, v.SameLevel, v.Tests = 1-lv.Differ, 1-2*lv.Same, tests
	var cs []Comparison
	cs = append(cs, arrivals(recs, reps, o, lv)...)
	if v.Paired = paired(recs, reps); v.Paired {
		reps = align(recs, reps)
	}
	for _, m := range metrics {
		a, b := compare.NewSample(values(recs, m.get)), compare.NewSample(values(reps, m.get))
		var pa, pb compare.Sample
		if v.Paired {
			x, y := pairs(recs, reps, m.get)
			pa, pb = compare.NewSample(x), compare.NewSample(y)
		}
		abs := o.MarginMs
		if m.tokens {
			abs = 0.5 // counts differ by whole tokens
		}
		ks := compare.KS(a.Sorted, b.Sorted)
		for _, q := range qs {
			margin := o.Margin
			if q.q == 0.99 {
				margin = o.TailMargin
			}
			var r compare.Result
			if v.Paired {
				r = compare.PairedQuantileRatio(m.name+" "+q.name, pa, pb, q.q, lv, margin, abs)
			} else {
				r = compare.QuantileRatio(m.name+" "+q.name, a, b, q.q, lv, margin, abs)
			}
			cs = append(cs, Comparison{Result: r, KS: ks, Interval: true, Tail: q.q == 0.99})
		}
	}
	failed := func(rs []*record.Record) []bool {
		out := make([]bool, len(rs))
		for i, r := range rs {
			out[i] = r.Error != ""
		}
		return out
	}
	cs = append(cs, Comparison{Result: compare.RateDifference("error_rate", failed(recs), failed(reps), lv, o.ErrorMargin), KS: math.NaN(), Interval: true})
	if prefix {
		cs = append(cs, prefixReuse(recorded.HashIDs, replayed.HashIDs, o.PrefixMargin))
	} else {
		why := "give both sides' trace files with hash_ids: --compare-traces"
		if recorded.HashIDs != nil || replayed.HashIDs != nil {
			why = "a side's trace has no hash_ids"
		}
		v.NotCompared = append(v.NotCompared, "prefix reuse ("+why+")")
	}
	if think {
		sa, sb := compare.NewSample(ta), compare.NewSample(tb)
		ks := compare.KS(sa.Sorted, sb.Sorted)
		for _, q := range qs[:2] {
			r := compare.QuantileRatio("think_time_ms "+q.name, sa, sb, q.q, lv, o.Margin, o.MarginMs)
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

// paired reports whether the two sides are the same requests in the same order, as a replay
// of the recording sends them: as many records a side, and the input lengths of the i-th
// records correlated at 0.9 or more (on the log scale, so prompts sized by another tokenizer
// still pair). Paired sides are compared request by request (compare.PairedQuantileRatio).
func paired(rec, rep []*record.Record) bool {
	if len(rec) != len(rep) || len(rec) < MinArrivals {
		return false
	}
	a, b := make([]float64, len(rec)), make([]float64, len(rep))
	for i := range rec {
		if rec[i].InputTokens <= 0 || rep[i].InputTokens <= 0 {
			return false
		}
		a[i], b[i] = math.Log(float64(rec[i].InputTokens)), math.Log(float64(rep[i].InputTokens))
	}
	r, ok := pearson(a, b)
	return ok && r >= 0.9
}

// align undoes the swaps of neighbouring requests that a replay's sending lag makes (two
// requests due within a few milliseconds can reach the server in either order): where the
// i-th and (i+1)-th replayed requests fit the recorded ones better swapped — their input
// lengths' log ratios nearer the median ratio — they are swapped. It returns a copy.
func align(rec, rep []*record.Record) []*record.Record {
	out := slices.Clone(rep)
	lr := func(a, b *record.Record) float64 {
		return math.Log(float64(b.InputTokens) / float64(a.InputTokens))
	}
	ratios := make([]float64, len(rec))
	for i := range rec {
		ratios[i] = lr(rec[i], out[i])
	}
	slices.Sort(ratios)
	m := ratios[len(ratios)/2]
	for i := 0; i+1 < len(out); i++ {
		kept := math.Abs(lr(rec[i], out[i])-m) + math.Abs(lr(rec[i+1], out[i+1])-m)
		swapped := math.Abs(lr(rec[i], out[i+1])-m) + math.Abs(lr(rec[i+1], out[i])-m)
		if swapped < kept {
			out[i], out[i+1] = out[i+1], out[i]
		}
	}
	return out
}

// pairs returns the values of the requests that have one on both sides, pair by pair.
func pairs(rec, rep []*record.Record, get func(*record.Record) (float64, bool)) (a, b []float64) {
	for i := range rec {
		x, okx := get(rec[i])
		y, oky := get(rep[i])
		if okx && oky {
			a, b = append(a, x), append(b, y)
		}
	}
	return a, b
}

// byStart returns the records in order of arrival (a copy; the recorder writes a record when
// its request ends).
func byStart(rs []*record.Record) []*record.Record {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b *record.Record) int { return a.Start.Compare(b.Start) })
	return out
}

// prefixReuse compares the share of prompt blocks seen in an earlier request. The share is a
// property of the prompts sent, not a sample's chance: a replay of the recorded trace sends the
// same blocks and has the same share exactly. It is judged by its value against the margin,
// so giving the traces never makes a verdict less decisive.
func prefixReuse(rec, rep [][]int64, margin float64) Comparison {
	sa, na := reuse(rec)
	sb, nb := reuse(rep)
	c := Comparison{Result: compare.Result{Name: "prefix_reuse", Margin: margin, Difference: true, Count: na,
		Outcome: compare.NotEnough, Low: math.Inf(-1), High: math.Inf(1)}, KS: math.NaN()}
	if na == 0 || nb == 0 {
		return c
	}
	c.Base, c.Other = float64(sa)/float64(na), float64(sb)/float64(nb)
	c.Estimate = c.Other - c.Base
	c.Low, c.High = c.Estimate, c.Estimate
	switch {
	case c.Estimate > margin:
		c.Outcome = compare.Worse
	case c.Estimate < -margin:
		c.Outcome = compare.Better
	default:
		c.Outcome = compare.Same
	}
	return c
}

// combine is the panel's AnyDifference decision (telemetry/compare): not reproduced when any
// comparison found a difference (either way), not enough requests when any could not tell (a
// tail only when tails are required: otherwise it is an alarm, which can only find a
// difference), and reproduced when every other one is the same. The metric that diverged most
// is the one furthest from equal, in margins, among the comparisons that decided the verdict.
func combine(cs []Comparison, tails bool) (outcome, diverged string) {
	rs := make([]compare.Result, len(cs))
	for i, c := range cs {
		rs[i] = c.Result
		rs[i].Alarm = c.Tail && !tails
	}
	switch outcome, diverged = compare.Combine(compare.AnyDifference, rs); outcome {
	case compare.Different:
		return NotReproduced, diverged
	case compare.Same:
		return Reproduced, diverged
	}
	return NotEnough, diverged
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
// gaps (burstiness), as a ratio with a jackknife interval over batches of consecutive gaps, and
// the shape of the rate over time: the per-window request counts of the two sides, by a χ²
// test of homogeneity whose counting noise is scaled by the arrival process's own dispersion
// (the gaps' squared CV: 1 for Poisson arrivals, more for bursts), and their correlation. Both
// declare a difference at lv.Differ only, so a replay whose arrivals are another draw of the
// recording's process is not called different by chance more often than the verdict allows.
func arrivals(rec, rep []*record.Record, o Options, lv compare.Levels) []Comparison {
	a, b := starts(rec, 1), starts(rep, o.Speedup)
	enough := len(a) >= MinArrivals && len(b) >= MinArrivals
	cv := Comparison{Result: compare.Result{Name: "arrival_gap_cv", Margin: o.ArrivalMargin, Outcome: compare.NotEnough,
		Low: math.Inf(-1), High: math.Inf(1)}, KS: math.NaN(), Interval: true}
	if enough {
		cva, sa := gapCV(a)
		cvb, sb := gapCV(b)
		cv.Result = compare.LogRatio("arrival_gap_cv", cva, sa, cvb, sb, len(a)-1, lv, o.ArrivalMargin)
	}
	corr := Comparison{Result: compare.Result{Name: "arrival_rate_corr", Margin: 1 - o.MinRateCorr, Difference: true,
		Outcome: compare.NotEnough, Low: math.Inf(-1), High: math.Inf(1)}, KS: math.NaN()}
	if !enough {
		return []Comparison{cv, corr}
	}
	w := o.Window
	if w <= 0 {
		w = (a[len(a)-1] - a[0]) / DefaultWindows
	}
	if w <= 0 {
		return []Comparison{cv, corr}
	}
	// The windows both sides span in full: a side that sent its last request earlier (another
	// draw of the same process ends at another time) is not counted as a change of rate.
	n := int(min(a[len(a)-1], b[len(b)-1]) / w)
	ca, cb := counts(a, w, n), counts(b, w, n)
	if n < 3 {
		return []Comparison{cv, corr}
	}
	// A constant series has no correlation: it counts as none.
	r, _ := pearson(ca, cb)
	// Estimate is the correlation's shortfall from 1, judged against 1 − MinRateCorr.
	corr.Count, corr.Base, corr.Other = n, 1, r
	corr.Estimate = r - 1
	corr.Low, corr.High = corr.Estimate, corr.Estimate
	x, df := homogeneity(ca, cb)
	disp, m := dispersion(a, w, n)
	d2, m2 := dispersion(b, w, n)
	if m+m2 > 0 {
		disp = (disp*float64(m) + d2*float64(m2)) / float64(m+m2)
	}
	p := 1.0
	if df > 0 && m+m2 > 0 {
		// The dispersion is estimated: the statistic over its degrees of freedom, over the
		// dispersion, is F-distributed.
		p = 1 - distuv.F{D1: float64(df), D2: float64(m + m2)}.CDF(x/float64(df)/max(1, disp))
	}
	if r >= o.MinRateCorr || p >= lv.Differ {
		corr.Outcome = compare.Same
	} else {
		corr.Outcome = compare.Better // lower than the least that counts
	}
	return []Comparison{cv, corr}
}

// dispersion estimates the index of dispersion of the arrival counts (variance over mean: 1
// for Poisson arrivals, more for bursts or sessions whose turns come together) from the first n
// windows of width w, each split in halves: where the rate is about constant over a window,
// (h₁−h₂)²/(h₁+h₂) has the dispersion for its mean. It returns the mean over the windows that
// have arrivals, and their number.
func dispersion(ts []time.Duration, w time.Duration, n int) (float64, int) {
	half := counts(ts, w/2, 2*n)
	var sum float64
	m := 0
	for j := range n {
		h1, h2 := half[2*j], half[2*j+1]
		if h1+h2 == 0 {
			continue
		}
		sum += (h1 - h2) * (h1 - h2) / (h1 + h2)
		m++
	}
	if m == 0 {
		return 1, 0
	}
	return sum / float64(m), m
}

// homogeneity is the χ² statistic of homogeneity of two rows of counts (windows where both are
// 0 left out) and its degrees of freedom: about df when the two are draws of one Poisson
// process scaled to their totals.
func homogeneity(a, b []float64) (x float64, df int) {
	var na, nb float64
	for i := range a {
		na, nb = na+a[i], nb+b[i]
	}
	if na == 0 || nb == 0 {
		return 0, 0
	}
	k := 0
	for i := range a {
		t := a[i] + b[i]
		if t == 0 {
			continue
		}
		k++
		ea, eb := t*na/(na+nb), t*nb/(na+nb)
		x += (a[i]-ea)*(a[i]-ea)/ea + (b[i]-eb)*(b[i]-eb)/eb
	}
	return x, k - 1
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

// gapCV returns the coefficient of variation of the gaps between sorted times and the
// standard error of its logarithm, by the jackknife over batches of consecutive gaps (bursts
// make neighbouring gaps alike, so gaps are not independent); the error is +Inf when there are
// too few gaps for ten batches.
func gapCV(ts []time.Duration) (cv, se float64) {
	gaps := make([]float64, len(ts)-1)
	for i := range gaps {
		gaps[i] = float64(ts[i+1] - ts[i])
	}
	cv = cvOf(gaps, -1, 0)
	nb := min(50, len(gaps)/20)
	if nb < 10 || !(cv > 0) {
		return cv, math.Inf(1)
	}
	m := len(gaps) / nb
	theta := make([]float64, nb)
	var mean float64
	for j := range theta {
		c := cvOf(gaps[:nb*m], j*m, (j+1)*m)
		if !(c > 0) {
			return cv, math.Inf(1)
		}
		theta[j] = math.Log(c)
		mean += theta[j]
	}
	mean /= float64(nb)
	var ss float64
	for _, t := range theta {
		ss += (t - mean) * (t - mean)
	}
	return cv, math.Sqrt(float64(nb-1) / float64(nb) * ss)
}

// cvOf is the coefficient of variation of xs without xs[skipFrom:skipTo].
func cvOf(xs []float64, skipFrom, skipTo int) float64 {
	var n, sum, sq float64
	for i, g := range xs {
		if i >= skipFrom && i < skipTo {
			continue
		}
		n++
		sum += g
		sq += g * g
	}
	mean := sum / n
	if !(mean > 0) {
		return 0
	}
	return math.Sqrt(max(0, sq/n-mean*mean)) / mean
}

// counts are the numbers of times in each of the first n windows of width w.
func counts(ts []time.Duration, w time.Duration, n int) []float64 {
	out := make([]float64, n)
	for _, t := range ts {
		if i := int(t / w); i < n {
			out[i]++
		}
	}
	return out
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
	paired := ""
	if v.Paired {
		paired = "; paired request by request"
	}
	base, other := "recorded", "replayed"
	if v.Labels[0] != "" && v.Labels[1] != "" {
		base, other = v.Labels[0], v.Labels[1]
		fmt.Fprintf(&b, "comparison: %d requests of %s, %d of %s; %s%s\n", v.Recorded, base, v.Replayed, other, v.Measured, paired)
	} else {
		fmt.Fprintf(&b, "fidelity: %d recorded requests, %d replayed; %s%s\n", v.Recorded, v.Replayed, v.Measured, paired)
	}
	fmt.Fprintf(&b, "%-26s %12.12s %12.12s %9s %21s %7s %6s  %s\n", "metric", base, other, "ratio", "interval", "margin", "KS D", "verdict")
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
	fmt.Fprintf(&b, "verdict: %s (a difference at %.4f%% each, over %d comparisons; the same at %.4g%% each; diverged most: %s)\n", v.Outcome, 100*v.Level, v.Tests, 100*v.SameLevel, v.Diverged)
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
