// Package compare is llmtap's one statistical engine for its verdicts: the canary verdict
// (mirror) and the replay fidelity verdict (report/fidelity) judge a panel of
// comparisons, each a Result, and combine them by a Policy.
//
// A comparison is of an "other" side (the mirror, the replay) against a "base" side (live, the
// recording), judged against an equivalence margin. Two kinds of sample are compared:
//
//   - paired (PairedRatio, PairedRate, SlowShare): both sides measured the same requests, in
//     order. Each pair gives one statistic (a log ratio, a difference of outcomes) and its
//     variance is estimated by batch means over the pair order (Batches batches, Student's t
//     with Batches−1 degrees of freedom), which stays valid when the requests are not
//     independent (slow drift, bursts), as long as a batch is long against their memory;
//     a drift whose memory is not (Drift) is allowed for by a stated variance on the end of
//     PairedRatio's interval that lets a change through;
//   - independent (Quantile, Rates): exact distribution-free intervals of each side's quantile,
//     Wilson intervals of rates, for two samples that are not pairs.
//
// The interval of a comparison is two-sided at 1−alpha (alpha/2 on each side). A ratio is
// judged on the log scale: worse when its lower bound is above 1+margin, better when its upper
// bound is below 1/(1+margin), same when it lies within both, "not worse" when only its upper
// bound is inside (the one-sided question of a rollout gate). A difference is judged the same
// way against ±margin.
package compare

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Outcomes of one comparison of an "other" sample against a "base" sample, and of a panel.
const (
	Better    = "better"     // the other side is lower beyond the margin
	Same      = "same"       // the interval lies inside the margin
	NotWorse  = "not worse"  // the interval's upper end lies inside the margin
	Worse     = "worse"      // the other side is higher beyond the margin
	NotEnough = "not enough" // the interval is too wide to tell
	// Different is an AnyDifference panel's outcome when a comparison is better or worse.
	Different = "different"
)

// Result is one comparison. Its JSON is the canary API's (GET /llmtap/mirror's comparisons):
// base is "live", other "mirror", the outcome "verdict", Needed "pairs_needed"; an interval
// end that cannot be bounded (±Inf) is null.
type Result struct {
	// Name is the metric and quantile ("ttft_ms p99") or the rate's name.
	Name string
	// Base and Other are each side's point value (a quantile in the metric's unit, or a rate).
	Base, Other float64
	// Estimate is the comparison's estimate (a ratio other/base, or for a Difference the
	// difference other−base); Low and High bound it at the comparison's level (±Inf where the
	// samples cannot bound it).
	Estimate, Low, High float64
	// Difference is set when Estimate is a difference (a rate) rather than a ratio.
	Difference bool
	// Alarm is set on comparisons that can only make a panel worse: an alarm that is not
	// worse never holds a panel's decision (a tail too noisy to bound yet).
	Alarm bool
	// Margin is the equivalence margin it was judged by.
	Margin float64
	// Count is the size of the base sample (of both, for paired samples).
	Count int
	// Outcome is Better, Same, NotWorse, Worse or NotEnough.
	Outcome string
	// Needed estimates the sample size at which the interval would be narrow enough to
	// decide (it shrinks as 1/√n); 0 when it cannot be estimated.
	Needed int
}

// Divergence is how far the point estimate lies from equal, in units of the margin: 1 is at
// the margin. It ranks comparisons to name the one furthest from equal.
func (r Result) Divergence() float64 {
	if r.Count == 0 {
		return 0
	}
	if r.Difference {
		return math.Abs(r.Estimate) / r.Margin
	}
	return math.Abs(math.Log(nonzero(r.Estimate))) / math.Log1p(r.Margin)
}

func nonzero(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	return x
}

// ratio is a/b for positive quantities, with 0 and Inf where an interval end is unbounded.
func ratio(a, b float64) float64 {
	switch {
	case math.IsInf(a, 1) || b <= 0:
		return math.Inf(1)
	case math.IsInf(b, 1) || a <= 0:
		return 0
	}
	return a / b
}

// QuantileCI returns the q-quantile of sorted xs (nearest rank) and an exact distribution-free
// interval [lo, hi] that holds the true quantile with probability at least 1−alpha (alpha/2 on
// each side): order statistics x_(l) and x_(u) with Binomial(n, q) bounds. An end the sample
// cannot bound at that level is −Inf or +Inf.
func QuantileCI(xs []float64, q, alpha float64) (est, lo, hi float64) {
	n := len(xs)
	est = xs[max(0, min(n-1, int(math.Ceil(q*float64(n)))-1))]
	b := distuv.Binomial{N: float64(n), P: q}
	// P(x_(l) > Q) = P(B ≤ l−1): the largest l with B's CDF at l−1 at most alpha/2.
	l := 0
	for k := int(q * float64(n)); k >= 1; k-- {
		if b.CDF(float64(k-1)) <= alpha/2 {
			l = k
			break
		}
	}
	// P(x_(u) < Q) = P(B ≥ u) = 1 − CDF(u−1): the smallest u with CDF(u−1) at least 1−alpha/2.
	u := n + 1
	for k := max(1, int(q*float64(n))); k <= n; k++ {
		if b.CDF(float64(k-1)) >= 1-alpha/2 {
			u = k
			break
		}
	}
	lo, hi = math.Inf(-1), math.Inf(1)
	if l >= 1 {
		lo = xs[l-1]
	}
	if u <= n {
		hi = xs[u-1]
	}
	return est, lo, hi
}

// Wilson is the Wilson score interval of k events in n at the normal quantile z (both may be
// fractional: an effective size, when events come in bursts).
func Wilson(k, n, z float64) (lo, hi float64) {
	p := k / n
	c := p + z*z/(2*n)
	h := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	d := 1 + z*z/n
	return max(0, (c-h)/d), min(1, (c+h)/d)
}

// KS is the two-sample Kolmogorov–Smirnov distance of sorted a and b: the largest difference
// of their empirical distribution functions, from 0 (the same) to 1 (disjoint). It is NaN when
// either sample is empty.
func KS(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	var i, j int
	d := 0.0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}
