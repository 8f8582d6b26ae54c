package headroom

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// A window is one time window's requests as the rate model sees them: its arrival rate x
// (requests/s, pooled with its neighbours: see smoothWindows), its mean TTFT y (ms) and mean
// concurrency c, over n requests that ended within its d seconds.
type window struct {
	x, y, c, n, d float64
}

// smoothHalfWidth is how many windows on each side pool into a window's rate. A window's own
// count of requests is a Poisson-noisy measure of its load (±10 % at 100 requests), and the
// noise correlates with its TTFT (a window that happened to get more arrivals queued more), so
// a fit on the raw rates finds a slope where the load is steady; pooled over three windows the
// noise is √3 smaller. See the calibration in docs/headroom.md.
const smoothHalfWidth = 1

// smoothWindows sets each window's x to the requests over the time of it and its neighbours
// (counts and durations in time order; a window with d == 0 is left out of the pools).
func smoothWindows(ws []window, d []float64) {
	n := make([]float64, len(ws))
	for i := range ws {
		n[i] = ws[i].n
	}
	for i := range ws {
		var sn, sd float64
		for j := max(0, i-smoothHalfWidth); j <= min(len(ws)-1, i+smoothHalfWidth); j++ {
			sn += n[j]
			sd += d[j]
		}
		ws[i].x = sn / sd
	}
}

// rateFit is the rate model's outcome over some windows: the rate at which the mean TTFT,
// fitted non-decreasing in the rate, first reaches the objective (interpolated between the
// windows either side), or +Inf when no window's fit reaches it, 0 when the lowest rate's
// already does; the mean concurrency fitted there; the highest rate seen.
type rateFit struct {
	rate, concurrency       float64
	maxRate, maxConcurrency float64 // the highest rate seen, and the concurrency fitted there
}

// fitRate fits ws (any order; sorted in place by y): the rate and the concurrency, each
// fitted non-decreasing in the mean TTFT, read where the TTFT is the objective (linearly
// between the windows either side). The rate is fitted on the TTFT, not the TTFT on the rate:
// a window's rate is noisy and TTFT rises steeply near the capacity, so the noise in the rate
// (which a fit on the rate takes for the cause) would move the point where the objective is
// reached by as much as the noise, while the noise in the mean TTFT, seen in the rate's units,
// is small where TTFT is steep. It never extrapolates: the objective is read between two
// windows seen.
func fitRate(ws []window, objective float64) rateFit {
	var sc scratch
	return sc.fitRate(ws, objective)
}

// scratch is fitRate's working memory, kept across a bootstrap's resamples.
type scratch struct {
	xs, cs, w []float64
	bs        []block
}

// block is a run of pooled values in isotonic: their mean v, total weight w, count n.
type block struct {
	v, w float64
	n    int
}

func (sc *scratch) fitRate(ws []window, objective float64) rateFit {
	f := rateFit{rate: math.Inf(1), concurrency: math.Inf(1)}
	if len(ws) == 0 {
		return f
	}
	slices.SortFunc(ws, func(a, b window) int {
		switch {
		case a.y < b.y:
			return -1
		case a.y > b.y:
			return 1
		}
		return 0
	})
	xs, cs, w := sc.xs[:0], sc.cs[:0], sc.w[:0]
	for _, v := range ws {
		xs, cs, w = append(xs, v.x), append(cs, v.c), append(w, v.n)
	}
	sc.xs, sc.cs, sc.w = xs, cs, w
	sc.bs = isotonic(xs, w, sc.bs)
	sc.bs = isotonic(cs, w, sc.bs)
	f.maxRate, f.maxConcurrency = xs[len(xs)-1], cs[len(cs)-1]
	for j := range ws {
		if ws[j].y < objective {
			continue
		}
		if j == 0 {
			f.rate, f.concurrency = 0, 0
			return f
		}
		t := (objective - ws[j-1].y) / (ws[j].y - ws[j-1].y)
		f.rate = xs[j-1] + t*(xs[j]-xs[j-1])
		f.concurrency = cs[j-1] + t*(cs[j]-cs[j-1])
		return f
	}
	return f
}

// delivered is the one-sided confidence bounds at level p of the rate the server delivered in
// the windows whose mean TTFT is at or above the objective: their requests over their time
// (each window's own count, not pooled with its neighbours). With minSpreadWindows such
// windows or more its standard error comes from how their rates spread (Student's t with one
// degree of freedom fewer than the windows: completions are as regular as the server's service
// makes them, far more regular than Poisson's for a server of constant service times); with
// fewer, from the counts taken as Poisson's ((√n ∓ z/2)² / d, the square-root transform of the
// count), since a t bound from two to four windows is wider (t at 95 % of 2.1 to 6.3) than
// the counting noise of a server as irregular as Poisson's warrants. +Inf for both when no
// window is at or above the objective.
//
// A request is counted in the window where it ends, so this is a completion rate. TTFT does
// not fall as the load grows, so the rate at which it reaches the objective is at most what
// a window that broke it delivered, in expectation: hi is an upper confidence bound of the
// truth by itself. Where the load could not rise past the server's capacity (a closed loop
// without think time: every client waits for its last request), those windows delivered the
// capacity, the truth is that rate, and a figure read from the rate model lands above it as
// often as its noise puts it there; an estimate capped at lo is above the truth with a chance
// of about 1 − p at most.
// minSpreadWindows is the fewest windows whose spread sets delivered's standard error.
const minSpreadWindows = 5

func delivered(ws []window, objective, p float64) (lo, hi float64) {
	var n, d float64
	var rates []float64
	for _, w := range ws {
		if w.y >= objective && w.d > 0 {
			n += w.n
			d += w.d
			rates = append(rates, w.n/w.d)
		}
	}
	if d <= 0 {
		return math.Inf(1), math.Inf(1)
	}
	if k := len(rates); k >= minSpreadWindows {
		mean := n / d
		var ss float64
		for _, r := range rates {
			ss += (r - mean) * (r - mean)
		}
		se := math.Sqrt(ss / float64(k-1) / float64(k))
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(k - 1)}.Quantile(p)
		return max(0, mean-t*se), mean + t*se
	}
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	l, h := max(0, math.Sqrt(n)-z/2), math.Sqrt(n)+z/2
	return l * l / d, h * h / d
}

// isotonic replaces y by its weighted least-squares non-decreasing fit (pool adjacent
// violators), in place, and returns bs (its working memory, reused when given). O(n).
func isotonic(y, w []float64, bs []block) []block {
	bs = bs[:0]
	for i := range y {
		bs = append(bs, block{y[i], w[i], 1})
		for len(bs) > 1 && bs[len(bs)-2].v > bs[len(bs)-1].v {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			tw := a.w + b.w
			bs = bs[:len(bs)-2]
			bs = append(bs, block{(a.v*a.w + b.v*b.w) / tw, tw, a.n + b.n})
		}
	}
	i := 0
	for _, b := range bs {
		for range b.n {
			y[i] = b.v
			i++
		}
	}
	return bs
}
