package gen

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Statistical helpers for the arrival tests. Every test draws from a seeded generator, so its
// outcome is fixed; the tolerances are still set at about four standard errors, so that the
// tests would also pass for almost any other seed and fail only when the process is wrong.

// ksCritical01 is the Kolmogorov–Smirnov critical value at α = 0.01 for a sample of n: the
// asymptotic c(α)/√n with c(α) = √(−ln(α/2)/2) = 1.6276, accurate to well under 1 % for n in
// the thousands.
func ksCritical01(n int) float64 {
	return math.Sqrt(-math.Log(0.01/2)/2) / math.Sqrt(float64(n))
}

// ksStatistic returns D = sup |Fₙ(x) − F(x)|, the largest distance between the sample's
// empirical CDF and cdf. The supremum is reached at a sample point, on one side or the other of
// the empirical CDF's step there.
func ksStatistic(sample []float64, cdf func(float64) float64) float64 {
	xs := slices.Clone(sample)
	slices.Sort(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := cdf(x)
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return d
}

// expCDF is the exponential CDF with the given rate.
func expCDF(rate float64) func(float64) float64 {
	return func(x float64) float64 { return 1 - math.Exp(-rate*x) }
}

// gammaCDF is the CDF of the gamma distribution with shape k and scale θ: the regularised
// lower incomplete gamma function P(k, x/θ).
func gammaCDF(k, theta float64) func(float64) float64 {
	return func(x float64) float64 { return regGammaP(k, x/theta) }
}

// regGammaP is P(a, x), by its power series for x < a+1 and by the Lentz continued fraction for
// its complement otherwise (Numerical Recipes §6.2), each to double precision.
func regGammaP(a, x float64) float64 {
	if x <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 1000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-16 {
				break
			}
		}
		return sum * front
	}
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return 1 - front*h
}

// gaps draws n arrivals and returns the n gaps between them and the previous arrival (the first
// measured from the start), in seconds.
func gaps(a Arrivals, n int) []float64 {
	out := make([]float64, n)
	var prev time.Duration
	for i := range out {
		at := a.Next()
		out[i] = (at - prev).Seconds()
		prev = at
	}
	return out
}

// meanCV returns the mean and coefficient of variation (population standard deviation over
// mean) of xs.
func meanCV(xs []float64) (mean, cv float64) {
	var sum, sumsq float64
	for _, x := range xs {
		sum += x
	}
	mean = sum / float64(len(xs))
	for _, x := range xs {
		sumsq += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sumsq/float64(len(xs))) / mean
}

func TestRegGammaP(t *testing.T) {
	// Closed forms to check the helper the gamma tests rely on: P(1, x) = 1 − e^(−x),
	// P(1/2, x) = erf(√x), and P(2, x) = 1 − (1 + x)e^(−x); both branches of each are covered.
	for _, x := range []float64{0.01, 0.3, 1, 2.5, 7, 30} {
		cases := []struct {
			a, want float64
		}{
			{1, 1 - math.Exp(-x)},
			{0.5, math.Erf(math.Sqrt(x))},
			{2, 1 - (1+x)*math.Exp(-x)},
		}
		for _, c := range cases {
			if got := regGammaP(c.a, x); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("P(%v, %v) = %.15f, want %.15f", c.a, x, got, c.want)
			}
		}
	}
}

func TestKSStatistic(t *testing.T) {
	// A sample at the quantiles (i+½)/n of the uniform distribution is as close as a sample can
	// be: D = 1/(2n). Shifting it by 0.1 moves D to 0.1 + 1/(2n).
	const n = 100
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = (float64(i) + 0.5) / n
	}
	uniform := func(x float64) float64 { return min(max(x, 0), 1) }
	if d := ksStatistic(xs, uniform); math.Abs(d-0.005) > 1e-12 {
		t.Errorf("D = %v for the quantile sample, want 0.005", d)
	}
	shifted := func(x float64) float64 { return uniform(x - 0.1) }
	if d := ksStatistic(xs, shifted); math.Abs(d-0.105) > 1e-12 {
		t.Errorf("D = %v for a shifted CDF, want 0.105", d)
	}
}
