package gen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func TestPoissonGapsAreExponentialKS(t *testing.T) {
	const rate, n = 50.0, 10_000
	sample := gaps(NewPoisson(rate, seeded(1)), n)
	crit := ksCritical01(n)
	if d := ksStatistic(sample, expCDF(rate)); d > crit {
		t.Errorf("KS D = %.4f against Exp(%v), above the α=0.01 critical value %.4f", d, rate, crit)
	}
	// The same test must reject what is not the right distribution, or passing it proves
	// nothing: a rate 10 % off, and a same-mean gamma with half the shape (CV √2).
	wrong := []struct {
		name string
		cdf  func(float64) float64
	}{
		{"exponential at 1.1× the rate", expCDF(1.1 * rate)},
		{"exponential at 0.9× the rate", expCDF(0.9 * rate)},
	}
	for _, w := range wrong {
		if d := ksStatistic(sample, w.cdf); d <= crit {
			t.Errorf("KS D = %.4f against %s, want above %.4f: the test has no power", d, w.name, crit)
		}
	}
	bursty := gaps(NewGamma(rate, 0.5, seeded(1)), n)
	if d := ksStatistic(bursty, expCDF(rate)); d <= crit {
		t.Errorf("KS D = %.4f for gamma k=0.5 gaps against Exp(%v), want above %.4f", d, rate, crit)
	}
}

func TestAchievedRate(t *testing.T) {
	// The achieved rate is (n−1) gaps over the span from the first to the last arrival. Its
	// relative standard error is CV/√n, so "within 1 %" is a sound test only once n is about
	// (4·CV/1 %)²: at 10,000 arrivals it is one standard error for Poisson and half of one for
	// gamma k=0.25. Each process is therefore checked at 10,000 arrivals with a four-sigma
	// tolerance, and at the n where four sigma is 1 %.
	const rate = 40.0
	cases := []struct {
		name string
		a    Arrivals
		n    int
		tol  float64
		why  string
	}{
		{"constant", NewConstant(rate), 10_000, 1e-12, "deterministic: exact up to float rounding"},
		{"poisson 10k", NewPoisson(rate, seeded(2)), 10_000, 0.04, "CV 1: 4σ = 4 %"},
		{"poisson 160k", NewPoisson(rate, seeded(3)), 160_000, 0.01, "CV 1: 4σ = 1 %"},
		{"gamma k=0.25 10k", NewGamma(rate, 0.25, seeded(4)), 10_000, 0.08, "CV 2: 4σ = 8 %"},
		{"gamma k=0.25 640k", NewGamma(rate, 0.25, seeded(5)), 640_000, 0.01, "CV 2: 4σ = 1 %"},
		{"gamma k=4 10k", NewGamma(rate, 4, seeded(6)), 10_000, 0.02, "CV 0.5: 4σ = 2 %"},
		{"gamma k=4 40k", NewGamma(rate, 4, seeded(7)), 40_000, 0.01, "CV 0.5: 4σ = 1 %"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first := c.a.Next()
			last := first
			for range c.n - 1 {
				at := c.a.Next()
				if at < last {
					t.Fatalf("arrival at %v after one at %v", at, last)
				}
				last = at
			}
			got := float64(c.n-1) / (last - first).Seconds()
			if math.Abs(got-rate)/rate > c.tol {
				t.Errorf("achieved %.4f/s over %d arrivals, want %v/s within %g (%s)", got, c.n, rate, c.tol, c.why)
			}
		})
	}
}

func TestConstantIsExact(t *testing.T) {
	// Request n is due at exactly n/rate, rounded to the nanosecond once, for rates whose gap is
	// not a whole number of nanoseconds.
	for _, rate := range []float64{3, 7, 1e6 / 3, 0.3} {
		c := NewConstant(rate)
		for n := range 10_000 {
			want := time.Duration(math.Round(float64(n) / rate * 1e9))
			if got := c.Next(); got != want {
				t.Fatalf("rate %v: request %d at %v, want %v", rate, n, got, want)
			}
		}
	}
}
