package compare

import (
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Batches is the number of batches the paired comparisons estimate their variance from (batch
// means over the pair order). Thirty keeps Student's t near the normal (t₂₉) while each batch
// stays long: at 3,200 pairs a batch holds 106, so drift with a memory of a few hundred
// requests is mostly inside a batch rather than between batches. The simulation
// (mirror/canarysim, report/fidelity's calibration) measures what this leaves of the
// error rates.
const Batches = 30

// BatchMean is the mean of xs (in order) and the standard error of that mean by batch means:
// xs is cut into Batches consecutive batches (fewer when xs is short, at least two values
// each), and the variance of the mean is the variance of the batch means over their number.
// Dependence within a batch (slow drift, bursts) is so counted; dependence that outlasts a
// batch shows as correlation between neighbouring batch means, and the variance is inflated
// by (1+r)/(1−r) for their lag-1 autocorrelation r (taken in [0, 0.9]; the long-run variance
// of an AR(1) series). df is the batches less one. With fewer than four values se is +Inf.
// It is the package's one estimator of the variance of a mean under dependence: the paired
// comparisons, PairedQuantileRatio (through meanVariance) and Inflation all take it.
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
	ms := make([]float64, b)
	var ss float64
	for j := range b {
		lo, hi := j*n/b, (j+1)*n/b
		var m float64
		for _, x := range xs[lo:hi] {
			m += x
		}
		ms[j] = m/float64(hi-lo) - mean
		ss += ms[j] * ms[j]
	}
	v := ss / float64(b-1) / float64(b)
	if ss > 0 {
		var c float64
		for j := 1; j < b; j++ {
			c += ms[j] * ms[j-1]
		}
		r := min(0.9, max(0, c/ss))
		v *= (1 + r) / (1 - r)
	}
	return mean, math.Sqrt(v), b - 1
}

// Drift is an allowance for a slow drift of each side's own level (its speed) that the pairs
// cannot show: over a window not long against the drift's memory, the drift's level is an
// offset shared by every batch, which batch means (or any variance taken from the pairs
// themselves) take for signal. Nonparametric long-run variance estimators — batch means with
// many or few batches, overlapping batches, Bartlett kernels — are consistent only when the
// series is long against its memory (Flegal & Jones, Ann. Statist. 38, 2010; Andrews,
// Econometrica 59, 1991): at 800 pairs and a memory of 200 each of them was measured to see
// 0.4 to 0.65 of the true standard error (the canary's calibration, ITL at CV 0.3). The
// allowance states the drift an interval must cover instead: each side's own level, on the
// log scale, an AR(1) of stationary standard deviation SD whose correlation falls by a factor
// e every Memory pairs, the two sides' drifts independent. Its variance (Variance) is added to
// the variance of independent pairs — a component of uncertainty stated rather than
// estimated, as the GUM's Type B (JCGM 100:2008, §4.3) — and the batch means' variance is used
// instead when larger (a drift of shorter memory, which they see). The zero Drift allows none.
type Drift struct {
	// SD is the standard deviation of each side's own drift on the log scale (0.02: 2 %).
	SD float64
	// Memory is the drift's memory in pairs (the AR(1) coefficient is exp(−1/Memory)); 0 is
	// a drift independent from pair to pair.
	Memory float64
}

// Variance is the variance of the mean of n consecutive values of the difference of the two
// sides' drifts: 2·SD²/n · [(1+φ)/(1−φ) − 2φ(1−φⁿ)/(n(1−φ)²)] for φ = exp(−1/Memory), the
// variance of the mean of an AR(1) (Box, Jenkins & Reinsel, Time Series Analysis, §2.1); it
// falls as 1/n only once n is long against Memory.
func (d Drift) Variance(n int) float64 {
	if d.SD <= 0 || n <= 0 {
		return 0
	}
	v := 2 * d.SD * d.SD / float64(n)
	if d.Memory <= 0 {
		return v
	}
	phi := math.Exp(-1 / d.Memory)
	k := float64(n)
	return v * ((1+phi)/(1-phi) - 2*phi*(1-math.Pow(phi, k))/(k*(1-phi)*(1-phi)))
}

// tQuantile is Student's t quantile at p with df degrees of freedom. The quantiles of the
// batch means' few degrees of freedom are kept (at most maxTCache of them): a verdict asks for
// them at the same levels for every comparison of every look.
func tQuantile(p float64, df int) float64 {
	if df > Batches {
		return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
	}
	k := tKey{p, df}
	tCache.Lock()
	q, ok := tCache.m[k]
	tCache.Unlock()
	if ok {
		return q
	}
	q = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
	tCache.Lock()
	if len(tCache.m) < maxTCache {
		tCache.m[k] = q
	}
	tCache.Unlock()
	return q
}

type tKey struct {
	p  float64
	df int
}

const maxTCache = 4096

var tCache = struct {
	sync.Mutex
	m map[tKey]float64
}{m: map[tKey]float64{}}

// Ends are the error levels of the two ends of a paired comparison's interval: the chance that
// the lower end is above the truth is at most Low, that the upper end is below it at most
// High. A decision that the other side is worse rests on the lower end alone; one that it is
// not worse (or the same, or better) on the upper end, so a gate can spend its error budgets
// for the two kinds of mistake apart. Sym(alpha) is the two-sided interval at 1−alpha.
type Ends struct{ Low, High float64 }

// Sym is the two-sided interval at level 1−alpha: alpha/2 at each end.
func Sym(alpha float64) Ends { return Ends{alpha / 2, alpha / 2} }

// widths are the distances of the two ends from the estimate, by Student's t with df degrees
// of freedom and standard error se.
func (e Ends) widths(se float64, df int) (low, high float64) {
	return tQuantile(1-e.Low, df) * se, tQuantile(1-e.High, df) * se
}

// countWidths are the widths of a rate's interval: the larger of the batch-means interval's
// (Student's t on se) and that of the variance of k+2 events among n, by the normal quantile
// (a count's variance, not estimated from the batches, so that no events in a few pairs is not
// proof of equal rates).
func (e Ends) countWidths(se float64, df, k, n int) (low, high float64) {
	low, high = e.widths(se, df)
	floor := math.Sqrt(float64(k+2)) / float64(n)
	return max(low, distuv.UnitNormal.Quantile(1-e.Low)*floor), max(high, distuv.UnitNormal.Quantile(1-e.High)*floor)
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

// Trim is the share of the per-pair log ratios cut from each end before PairedRatio's mean:
// the rare requests one side served far slower (a retry, a cold cache) would otherwise swing
// the typical ratio; the tail alarms (SlowShare) watch them instead.
const Trim = 0.05

// PairedRatio compares other with base pair by pair: the statistic of pair i is
// d_i = log(other[i]/base[i]) (values below a floor of 1e-3 of the metric's unit count as that
// floor), their mean trimmed by Trim at each end estimates the log of the typical ratio
// other/base (exactly the log of c when other is base's distribution scaled by c, and 0 when
// the two sides are exchangeable), and its interval (ends at e) is Student's t with the
// Tukey–McLaughlin standard error (the winsorized values' standard error over 1−2·Trim), that
// standard error taken by batch means over the pair order (BatchMean) so that drift and bursts
// are counted. The upper end allows for drift besides: its standard error is the larger of
// that and the one of independent pairs with drift's variance added (Drift: a drift whose
// memory is long against the pairs, which batch means cannot see), by Student's t with the
// pairs' degrees of freedom when the allowance is the larger. It is the end whose error lets
// a change through (not worse, same, better); the lower end, whose error stops one, keeps the
// batch means alone. Within 1±margin (±log(1+margin) on the log scale) the two are the same.
// Base and Other are each side's median. base and other are not changed.
func PairedRatio(name string, base, other []float64, e Ends, margin float64, drift Drift) Result {
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
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	g := int(Trim * float64(n))
	lo, hi := sorted[g], sorted[n-1-g]
	mean := 0.0
	for _, x := range sorted[g : n-g] {
		mean += x
	}
	mean /= float64(n - 2*g)
	for i, x := range d {
		d[i] = min(hi, max(lo, x)) // winsorized, in pair order
	}
	wmean, se, df := BatchMean(d)
	r.Estimate = math.Exp(mean)
	if df == 0 {
		return r
	}
	tm := 1 - 2*float64(g)/float64(n)
	se /= tm
	var ss float64
	for _, x := range d {
		ss += (x - wmean) * (x - wmean)
	}
	// The drift moves every pair's ratio alike, so it passes through the trimmed mean whole
	// (not scaled by the Tukey–McLaughlin factor, which is for the spread of single pairs).
	wl, wh := e.widths(se, df)
	if v := ss/float64(n-1)/float64(n)/(tm*tm) + drift.Variance(n); drift.SD > 0 && v > se*se {
		_, wh = e.widths(math.Sqrt(v), n-1)
	}
	r.Low, r.High = math.Exp(mean-wl), math.Exp(mean+wh)
	m := math.Log1p(margin)
	r.Outcome = judge(mean-wl, mean+wh, m)
	r.Needed = neededFor(n, mean, wh, m)
	return r
}

// PairedRate compares the rate of events (errors, missed objectives) of other with base's over
// the same pairs: the statistic of pair i is other[i]−base[i] (1, 0 or −1), its mean the
// difference of the rates, its interval (ends at e) the batch-means t interval or, when wider,
// the normal interval of one event more on each side (variance (events+2)/n², so that no
// events in a few pairs is not taken as proof of equal rates). Within ±margin the two are the
// same.
func PairedRate(name string, base, other []bool, e Ends, margin float64) Result {
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
	wl, wh := e.countWidths(se, df, kb+ko, n)
	r.Low, r.High = mean-wl, mean+wh
	r.Outcome = judge(r.Low, r.High, margin)
	r.Needed = neededFor(n, mean, wh, margin)
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
func SlowShare(name string, base, other []float64, q float64, e Ends, margin float64) Result {
	n := min(len(base), len(other))
	r := Result{Name: name, Margin: margin, Count: n, Alarm: true, Outcome: NotEnough, Low: 0, High: math.Inf(1)}
	if n == 0 {
		return r
	}
	pooled := make([]float64, 0, 2*n)
	pooled = append(append(pooled, base[:n]...), other[:n]...)
	t := NearestRank(pooled, q)
	r.Base, r.Other = NearestRank(base[:n], q), NearestRank(other[:n], q)
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
	wl, wh := e.countWidths(se, df, kb+ko, n)
	r.Low, r.High = ratio(mean-wl), ratio(mean+wh)
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
func median(xs []float64) float64 { return NearestRank(xs, 0.5) }

// NearestRank is the q-quantile of xs by nearest rank (the smallest value with at least q of
// the values at or below it), leaving xs as it is; 0 for none.
func NearestRank(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return kth(slices.Clone(xs), max(0, min(len(xs)-1, int(math.Ceil(q*float64(len(xs))))-1)))
}

// kth is the k-th smallest of xs (from 0), reordering xs: Hoare's selection, O(n) on average.
func kth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		p := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
