package compare

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Levels are the two error levels of a decision that can end either way: a difference is
// declared at Differ (two-sided: the chance that a comparison whose truth lies within the
// margin is called better or worse), sameness at Same (one-sided on each side of the margin, as
// in the two one-sided tests of equivalence: the chance that a comparison whose truth lies
// outside the margin is called the same). A verdict that needs every comparison to be the same
// controls its false "same" at Same without dividing it (an intersection–union test); one that
// ends at the first difference divides Differ over its comparisons (Bonferroni).
type Levels struct {
	Differ, Same float64
}

// zDiffer and zSame are the normal quantiles of the two levels.
func (l Levels) z() (differ, same float64) {
	return distuv.UnitNormal.Quantile(1 - l.Differ/2), distuv.UnitNormal.Quantile(1 - l.Same)
}

// Sample is one side's values of a metric: in time order, and sorted.
type Sample struct {
	// Values are in time order (the order the requests arrived in).
	Values []float64
	// Sorted are the same values in increasing order.
	Sorted []float64
}

// NewSample keeps xs (in time order; not copied) and a sorted copy.
func NewSample(xs []float64) Sample {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Sample{Values: xs, Sorted: s}
}

// QuantileRatio compares the q-quantile of other with base's, as the ratio other/base of two
// independent samples given in time order (neither is modified). The log ratio's standard error
// is each side's, added in quadrature, and each side's comes from its distribution-free
// order-statistic interval at 95 % (Price and Bonett, "Distribution-free confidence intervals
// for difference and ratio of medians", J. Stat. Comput. Simul. 72, 2002, extended to any
// quantile), widened by the side's variance inflation (Inflation) so that requests that are not
// independent — a server's speed drifting, bursts — do not narrow it. The outcome is Worse or
// Better when the interval at lv.Differ lies beyond the margin and the sides are more than
// marginAbs apart (in the metric's unit), Same when the interval at lv.Same lies within the
// margin or the difference's lies within ±marginAbs, and NotEnough otherwise. Low and High are
// the interval at lv.Differ.
func QuantileRatio(name string, base, other Sample, q float64, lv Levels, margin, marginAbs float64) Result {
	r, bse, ose, ok := quantiles(name, base, other, q, margin)
	if !ok {
		return r
	}
	bq, oq := r.Base, r.Other
	bse *= math.Sqrt(Inflation(base.Values, bq))
	ose *= math.Sqrt(Inflation(other.Values, oq))
	decideRatio(&r, math.Hypot(bse, ose), lv, marginAbs)
	return r
}

// PairedQuantileRatio is QuantileRatio for paired samples: base[i] and other[i] were measured on
// the same request (a replay sends the recording's own requests), in time order. The log
// ratio's standard error allows for the correlation of the pairs — a request's output length
// sets its latency on both sides, so what the two sides share does not widen the interval —
// from the influence functions of the two quantiles, pair by pair, with their batch means over
// time order when that is larger (requests that are not independent).
func PairedQuantileRatio(name string, base, other Sample, q float64, lv Levels, margin, marginAbs float64) Result {
	if len(base.Values) != len(other.Values) {
		panic("compare: PairedQuantileRatio of samples of different sizes")
	}
	r, bse, ose, ok := quantiles(name, base, other, q, margin)
	if !ok {
		return r
	}
	bq, oq := r.Base, r.Other
	// ψ_i is request i's share of ln(oq) − ln(bq): each side's indicator of lying at or below
	// its quantile, scaled so that its variance over n is the side's squared standard error.
	bv, ov := base.Values, other.Values
	n := float64(len(bv))
	share := func(xs []float64, x float64) float64 {
		k := 0
		for _, v := range xs {
			if v <= x {
				k++
			}
		}
		return float64(k) / n
	}
	// A side whose values all tie at its quantile (a fixed prompt length) has no spread there:
	// it adds nothing to the error.
	weight := func(se, p float64) float64 {
		if se == 0 || p <= 0 || p >= 1 {
			return 0
		}
		return se / math.Sqrt(p*(1-p)/n)
	}
	bp, op := share(bv, bq), share(ov, oq)
	bw, ow := weight(bse, bp), weight(ose, op)
	psi := make([]float64, len(bv))
	for i := range psi {
		var ib, io float64
		if bv[i] <= bq {
			ib = 1
		}
		if ov[i] <= oq {
			io = 1
		}
		psi[i] = ow*(io-op) - bw*(ib-bp)
	}
	v := meanVariance(psi)
	decideRatio(&r, math.Sqrt(v), lv, marginAbs)
	return r
}

// quantiles starts a ratio comparison of the q-quantiles: each side's quantile and the standard
// error of its logarithm were its values independent; ok is false (the result not enough) when
// either side is empty or cannot bound its quantile.
func quantiles(name string, base, other Sample, q, margin float64) (r Result, bse, ose float64, ok bool) {
	r = Result{Name: name, Margin: margin, Count: len(base.Values), Outcome: NotEnough,
		Low: math.Inf(-1), High: math.Inf(1)}
	if len(base.Values) == 0 || len(other.Values) == 0 {
		return r, 0, 0, false
	}
	bq, bse, bok := logQuantile(base.Sorted, q)
	oq, ose, ook := logQuantile(other.Sorted, q)
	r.Base, r.Other = bq, oq
	r.Estimate = ratio(oq, bq)
	return r, bse, ose, bok && ook && bq > 0 && oq > 0
}

// decideRatio sets the interval and outcome of a ratio comparison whose log ratio has standard
// error se.
func decideRatio(r *Result, se float64, lv Levels, marginAbs float64) {
	zd, zs := lv.z()
	bq, oq := r.Base, r.Other
	d := math.Log(oq / bq)
	r.Low, r.High = math.Exp(d-zd*se), math.Exp(d+zd*se)
	// The difference oq−bq, by the delta method.
	dse := math.Sqrt(bq*oq) * se
	diff := oq - bq
	lm := math.Log1p(r.Margin)
	switch {
	case d-zd*se > lm && diff-zd*dse > marginAbs:
		r.Outcome = Worse
	case d+zd*se < -lm && diff+zd*dse < -marginAbs:
		r.Outcome = Better
	case math.Abs(d)+zs*se <= lm, math.Abs(diff)+zs*dse <= marginAbs:
		r.Outcome = Same
	}
	r.Needed = neededSE(r.Count, se, zs, r.Margin)
}

// logQuantile returns the q-quantile of sorted xs (nearest rank) and the standard error of its
// logarithm were the values independent: the width of the 95 % order-statistic interval on
// the log scale over 2×1.96. ok is false when the sample cannot bound the quantile at 95 % or a
// bound is not positive.
func logQuantile(xs []float64, q float64) (est, se float64, ok bool) {
	est, lo, hi := QuantileCI(xs, q, 0.05)
	if !(lo > 0) || math.IsInf(hi, 1) {
		return est, math.Inf(1), false
	}
	return est, (math.Log(hi) - math.Log(lo)) / (2 * 1.959963984540054), true
}

// meanVariance is the variance of the mean of xs (in time order): the larger of the
// independent draws' (the sample variance over n) and BatchMean's, which is larger when
// neighbouring values are alike.
func meanVariance(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return math.Inf(1)
	}
	mean, se, _ := BatchMean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return max(ss/float64(n-1)/float64(n), se*se)
}

// Inflation is the variance inflation of the share of xs (in time order) at or below x: the
// variance of that share by BatchMean (over the indicators of lying at or below x) over its
// variance were the values independent, at least 1. Values that drift or come in bursts are
// correlated with their neighbours, and the share of a sample from them varies more than
// independent draws would: an interval that ignored it would be too narrow.
func Inflation(xs []float64, x float64) float64 {
	n := len(xs)
	in := make([]float64, n)
	for i, v := range xs {
		if v <= x {
			in[i] = 1
		}
	}
	p, se, df := BatchMean(in)
	if df == 0 || p <= 0 || p >= 1 {
		return 1
	}
	return max(1, se*se/(p*(1-p)/float64(n)))
}

// RateDifference compares the rate of an event in other with base's, other minus base, by
// Newcombe's hybrid score interval of the difference of two proportions ("Interval estimation
// for the difference between independent proportions", Stat. Med. 17, 1998) — each side's
// Wilson interval, on the side's effective size when its events come in bursts (the count
// divided by the variance inflation of the event indicator in time order). Worse or Better
// when the interval at lv.Differ lies beyond ±margin, Same when the interval at lv.Same lies
// within it, NotEnough otherwise. base and other are the events (true) in time order.
func RateDifference(name string, base, other []bool, lv Levels, margin float64) Result {
	r := Result{Name: name, Count: len(base), Margin: margin, Difference: true, Outcome: NotEnough,
		Low: math.Inf(-1), High: math.Inf(1)}
	if len(base) == 0 || len(other) == 0 {
		return r
	}
	bk, bn := effective(base)
	ok, on := effective(other)
	r.Base, r.Other = bk/bn, ok/on
	r.Estimate = r.Other - r.Base
	zd, zs := lv.z()
	interval := func(z float64) (lo, hi float64) {
		bl, bh := Wilson(bk, bn, z)
		ol, oh := Wilson(ok, on, z)
		d := r.Estimate
		return d - math.Hypot(r.Other-ol, bh-r.Base), d + math.Hypot(oh-r.Other, r.Base-bl)
	}
	r.Low, r.High = interval(zd)
	sl, sh := interval(zs)
	switch {
	case r.Low > margin:
		r.Outcome = Worse
	case r.High < -margin:
		r.Outcome = Better
	case sl >= -margin && sh <= margin:
		r.Outcome = Same
	}
	if w := (sh - sl) / 2; w > margin {
		r.Needed = int(math.Ceil(float64(len(base)) * (w / margin) * (w / margin)))
	}
	return r
}

// effective returns the events of xs and its size, both divided by the variance inflation of
// the event indicator (batch means over time order).
func effective(xs []bool) (k, n float64) {
	v := make([]float64, len(xs))
	for i, x := range xs {
		if x {
			v[i] = 1
			k++
		}
	}
	f := Inflation(v, 0.5)
	return k / f, float64(len(xs)) / f
}

// neededSE scales n by the square of the log-ratio standard error against what a decision at
// z needs to tell a change of twice the margin from the margin.
func neededSE(n int, se, z, margin float64) int {
	room := (math.Log1p(2*margin) - math.Log1p(margin)) / z
	if se <= room || math.IsInf(se, 0) {
		return n
	}
	return int(math.Ceil(float64(n) * (se / room) * (se / room)))
}

// LogRatio compares a positive statistic of other with base's as a ratio, from each side's
// estimate and the standard error of its logarithm (from a jackknife or a delta method): Worse
// or Better beyond the margin at lv.Differ, Same within it at lv.Same, NotEnough otherwise.
func LogRatio(name string, base, baseSE, other, otherSE float64, n int, lv Levels, margin float64) Result {
	r := Result{Name: name, Margin: margin, Count: n, Outcome: NotEnough, Base: base, Other: other,
		Low: math.Inf(-1), High: math.Inf(1), Estimate: ratio(other, base)}
	if !(base > 0 && other > 0) || math.IsInf(baseSE, 0) || math.IsInf(otherSE, 0) || math.IsNaN(baseSE+otherSE) {
		return r
	}
	zd, zs := lv.z()
	d, se, lm := math.Log(other/base), math.Hypot(baseSE, otherSE), math.Log1p(margin)
	r.Low, r.High = math.Exp(d-zd*se), math.Exp(d+zd*se)
	switch {
	case d-zd*se > lm:
		r.Outcome = Worse
	case d+zd*se < -lm:
		r.Outcome = Better
	case math.Abs(d)+zs*se <= lm:
		r.Outcome = Same
	}
	r.Needed = neededSE(n, se, zs, margin)
	return r
}
