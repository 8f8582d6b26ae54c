package compare

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Batches is the number of batches the paired comparisons estimate their variance from (batch
// means over the pair order). Twenty keeps Student's t near the normal (t₁₉) while each batch
// stays long: at 3,200 pairs a batch holds 160, so drift with a memory of a few hundred
// requests is mostly inside a batch rather than between batches. The simulation
// (telemetry/compare/calibrate) measures what this leaves of the error rates.
const Batches = 20

// BatchMean is the mean of xs (in order) and the standard error of that mean by batch means:
// xs is cut into Batches consecutive batches (fewer when xs is short, at least two values
// each), and the variance of the mean is the variance of the batch means over their number.
// Dependence within a batch (slow drift, bursts) is so counted; df is the batches less one.
// With fewer than four values se is +Inf.
func BatchMean(xs []float64) (mean, se float64, df int) {
	n := len(xs)
	if n == 0 {
		return 0, math.Inf(1), 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	b := min(Batches, n/2)
	if b < 2 {
		return mean, math.Inf(1), 0
	}
	var ss float64
	for j := range b {
		lo, hi := j*n/b, (j+1)*n/b
		var m float64
		for _, x := range xs[lo:hi] {
			m += x
		}
		m /= float64(hi - lo)
		ss += (m - mean) * (m - mean)
	}
	return mean, math.Sqrt(ss / float64(b-1) / float64(b)), b - 1
}

// tQuantile is Student's t quantile at p with df degrees of freedom.
func tQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// judge classifies an interval [lo, hi] of a log ratio or a difference against ±m.
func judge(lo, hi, m float64) string {
	switch {
	case lo > m:
		return Worse
	case hi < -m:
		return Better
	case lo >= -m && hi <= m:
		return Same
	case hi <= m:
		return NotWorse
	}
	return NotEnough
}

// needed scales n by the square of the interval's half-width w against the room between the
// estimate and the margin m (on the scale the interval is judged on): the pairs at which the
// upper end would come inside the margin, or the lower end clear it.
func neededFor(n int, est, w, m float64) int {
	room := math.Abs(m - math.Abs(est))
	if math.IsInf(w, 0) || math.IsNaN(w) || room == 0 {
		return 0
	}
	if w <= room {
		return n
	}
	return int(math.Min(math.Ceil(float64(n)*(w/room)*(w/room)), math.MaxInt32))
}

// PairedRatio compares other with base pair by pair: the statistic of pair i is
// log(other[i]/base[i]) (values below a floor of 1e-3 of the metric's unit count as that
// floor), their mean estimates the log of the typical ratio other/base (the ratio of the
// medians when other scales base's distribution), and its interval at level 1−alpha is the
// batch-means t interval (BatchMean). Within 1±margin (on the log scale, ±log(1+margin)) the
// two are the same. Base and Other are each side's median. base and other are not changed.
func PairedRatio(name string, base, other []float64, alpha, margin float64) Result {
	n := min(len(base), len(other))
	r := Result{Name: name, Margin: margin, Count: n, Outcome: NotEnough, Low: math.Inf(-1), High: math.Inf(1)}
	if n == 0 {
		return r
	}
	d := make([]float64, n)
	for i := range n {
		d[i] = math.Log(max(other[i], 1e-3)) - math.Log(max(base[i], 1e-3))
	}
	r.Base, r.Other = median(base[:n]), median(other[:n])
	mean, se, df := BatchMean(d)
	r.Estimate = math.Exp(mean)
	if df == 0 {
		return r
	}
	w := tQuantile(1-alpha/2, df) * se
	r.Low, r.High = math.Exp(mean-w), math.Exp(mean+w)
	m := math.Log1p(margin)
	r.Outcome = judge(mean-w, mean+w, m)
	r.Needed = neededFor(n, mean, w, m)
	return r
}

// PairedRate compares the rate of events (errors, missed objectives) of other with base's over
// the same pairs: the statistic of pair i is other[i]−base[i] (1, 0 or −1), its mean the
// difference of the rates, its interval at level 1−alpha the batch-means t interval, with the
// variance at least that of one event more on each side ((events+2)/n², so that no events in
// a few pairs is not taken as proof of equal rates). Within ±margin the two are the same.
func PairedRate(name string, base, other []bool, alpha, margin float64) Result {
	n := min(len(base), len(other))
	r := Result{Name: name, Margin: margin, Count: n, Difference: true, Outcome: NotEnough, Low: math.Inf(-1), High: math.Inf(1)}
	if n == 0 {
		return r
	}
	d := make([]float64, n)
	var kb, ko int
	for i := range n {
		if base[i] {
			kb++
			d[i]--
		}
		if other[i] {
			ko++
			d[i]++
		}
	}
	r.Base, r.Other = float64(kb)/float64(n), float64(ko)/float64(n)
	mean, se, df := BatchMean(d)
	r.Estimate = mean
	if df == 0 {
		return r
	}
	se = max(se, math.Sqrt(float64(kb+ko+2))/float64(n))
	w := tQuantile(1-alpha/2, df) * se
	r.Low, r.High = mean-w, mean+w
	r.Outcome = judge(r.Low, r.High, margin)
	r.Needed = neededFor(n, mean, w, margin)
	return r
}

// SlowShare compares the share of slow requests, an alarm on the tail: a request is slow when
// its value exceeds T, the q-quantile of both sides' values together, and the statistic of
// pair i is slow(other[i]) − slow(base[i]), with the batch-means interval of its mean (as
// PairedRate). Both shares add up to about 2(1−q) whatever the two sides are, so the
// difference d maps to the ratio of the shares (s+d/2)/(s−d/2), s their mean: Estimate, Low
// and High are that ratio, other's share over base's, and the comparison is worse when the
// ratio's lower end is above 1+margin (the other side has more slow requests than the margin
// allows, for sure). It is an Alarm: it can make a panel worse and never holds its decision.
// Base and Other are each side's q-quantile, for reading. base and other are not changed.
func SlowShare(name string, base, other []float64, q, alpha, margin float64) Result {
	n := min(len(base), len(other))
	r := Result{Name: name, Margin: margin, Count: n, Alarm: true, Outcome: NotEnough, Low: 0, High: math.Inf(1)}
	if n == 0 {
		return r
	}
	pooled := make([]float64, 0, 2*n)
	pooled = append(append(pooled, base[:n]...), other[:n]...)
	slices.Sort(pooled)
	t := pooled[min(2*n-1, max(0, int(math.Ceil(q*float64(2*n)))-1))]
	r.Base, r.Other = nearestRank(base[:n], q), nearestRank(other[:n], q)
	d := make([]float64, n)
	var kb, ko int
	for i := range n {
		if base[i] > t {
			kb++
			d[i]--
		}
		if other[i] > t {
			ko++
			d[i]++
		}
	}
	s := float64(kb+ko) / float64(2*n)
	mean, se, df := BatchMean(d)
	ratio := func(x float64) float64 {
		switch {
		case x/2 >= s:
			return math.Inf(1)
		case -x/2 >= s:
			return 0
		}
		return (s + x/2) / (s - x/2)
	}
	r.Estimate = ratio(mean)
	if s == 0 || df == 0 {
		r.Estimate = 1
		return r
	}
	se = max(se, math.Sqrt(float64(kb+ko+2))/float64(n))
	w := tQuantile(1-alpha/2, df) * se
	r.Low, r.High = ratio(mean-w), ratio(mean+w)
	switch {
	case r.Low > 1+margin:
		r.Outcome = Worse
	case r.High < 1/(1+margin):
		r.Outcome = Better
	case r.Low >= 1/(1+margin) && r.High <= 1+margin:
		r.Outcome = Same
	case r.High <= 1+margin:
		r.Outcome = NotWorse
	}
	return r
}

// median is the median of xs by nearest rank, leaving xs as it is.
func median(xs []float64) float64 { return nearestRank(xs, 0.5) }

// nearestRank is the q-quantile of xs by nearest rank (the smallest value with at least q of
// the values at or below it), leaving xs as it is; 0 for none.
func nearestRank(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1))]
}
