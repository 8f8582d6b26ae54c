package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileCICoverage: the order-statistic interval holds the true quantile at least as
// often as its level says (exponential samples, whose quantiles are known).
func TestQuantileCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, q := range []float64{0.5, 0.9, 0.99} {
		truth := -math.Log(1 - q)
		const trials, n, alpha = 1000, 400, 0.1
		miss := 0
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.ExpFloat64()
			}
			slices.Sort(xs)
			_, lo, hi := QuantileCI(xs, q, alpha)
			if truth < lo || truth > hi {
				miss++
			}
		}
		// Exact intervals miss at most alpha of the time; allow three standard errors.
		if bound := alpha*trials + 3*math.Sqrt(alpha*(1-alpha)*trials); float64(miss) > bound {
			t.Errorf("q %v: the interval missed the true quantile %d times in %d (bound %.0f)", q, miss, trials, bound)
		}
	}
}

// TestKS: the distance of a sample from itself is 0, of disjoint samples 1, and of two
// shifted uniform grids the shift; ties are stepped over together.
func TestKS(t *testing.T) {
	a := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		b    []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 0},
		{[]float64{5, 6}, 1},
		{[]float64{2, 3, 4, 5}, 0.25},
		{[]float64{1, 1, 1, 1}, 0.75},
	} {
		if got := KS(a, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("KS(%v, %v) = %v, want %v", a, tc.b, got, tc.want)
		}
	}
	if !math.IsNaN(KS(a, nil)) {
		t.Error("KS with an empty sample is not NaN")
	}
}

// TestQuantileVerdicts: a sample against itself is the same; against one 30 % higher, worse
// (and the other way round better); a constant offset inside marginAbs is the same whatever
// the ratio; two samples too small to bound are not enough.
func TestQuantileVerdicts(t *testing.T) {
	base := make([]float64, 2000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range base {
		base[i] = 10 + rng.ExpFloat64()
	}
	scaled := func(f, add float64) []float64 {
		out := make([]float64, len(base))
		for i, x := range base {
			out[i] = x*f + add
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		other []float64
		abs   float64
		want  string
	}{
		{"same", scaled(1, 0), 0, Same},
		{"slower", scaled(1.3, 0), 0, Worse},
		{"faster", scaled(1/1.3, 0), 0, Better},
		{"offset inside marginAbs", scaled(1, 3), 4, Same},
		{"offset outside marginAbs", scaled(1, 3), 1, Worse},
	} {
		r := QuantileRatio("x p50", NewSample(base), NewSample(tc.other), 0.5, Levels{Differ: 0.01, Same: 0.01}, 0.05, tc.abs)
		if r.Outcome != tc.want {
			t.Errorf("%s: %s (estimate %.3f in [%.3f, %.3f]), want %s", tc.name, r.Outcome, r.Estimate, r.Low, r.High, tc.want)
		}
	}
	if r := QuantileRatio("x p99", NewSample([]float64{1, 2, 3}), NewSample([]float64{1, 2, 3}), 0.99, Levels{Differ: 0.01, Same: 0.01}, 0.05, 0); r.Outcome != NotEnough || !math.IsInf(r.High, 1) {
		t.Errorf("three values bound a p99: %+v", r)
	}
}
