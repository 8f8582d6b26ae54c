package gen

import (
	"math"
	"testing"
)

func TestGammaCV(t *testing.T) {
	// Gaps have CV 1/√k. The sample CV's standard error depends on the kurtosis 3 + 6/k: with
	// 20,000 gaps it is about 1.8 % of the CV for k = 0.25 and 0.7 % for k = 4, so the
	// tolerances below are about four of those.
	const rate, n = 25.0, 20_000
	cases := []struct {
		k, wantCV, tol float64
		why            string
	}{
		{0.25, 2, 0.16, "bursty: AIPerf/vLLM burstiness 0.25"},
		{1, 1, 0.04, "k = 1 is Poisson"},
		{4, 0.5, 0.015, "smooth: burstiness 4"},
	}
	for _, c := range cases {
		mean, cv := meanCV(gaps(NewGamma(rate, c.k, seeded(uint64(c.k*100))), n))
		if math.Abs(cv-c.wantCV) > c.tol {
			t.Errorf("k=%v (%s): CV %.4f, want %v ± %v", c.k, c.why, cv, c.wantCV, c.tol)
		}
		if math.Abs(mean*rate-1) > 4*c.wantCV/math.Sqrt(n) {
			t.Errorf("k=%v: mean gap %.6fs, want 1/%v", c.k, mean, rate)
		}
	}
}

func TestGammaSamplerKS(t *testing.T) {
	// The whole distribution, not just two moments, straight from the sampler (no nanosecond
	// rounding): both Marsaglia–Tsang branches, including the k < 1 boost down to shapes where
	// most of the mass is within a hair of zero.
	const n = 10_000
	crit := ksCritical01(n)
	for _, k := range []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 30} {
		s, rng := newGammaSampler(k), seeded(uint64(k*1000)+1)
		sample := make([]float64, n)
		for i := range sample {
			sample[i] = s.sample(rng)
		}
		if d := ksStatistic(sample, gammaCDF(k, 1)); d > crit {
			t.Errorf("k=%v: KS D = %.4f against Gamma(k, 1), above %.4f", k, d, crit)
		}
	}
}

func TestGammaGapsKS(t *testing.T) {
	// The arrival gaps of rate λ and shape k must be Gamma(k, 1/(λk)). (For k well below 0.25
	// a visible share of gaps is under a nanosecond and rounds to zero, so the sampler test
	// above covers those shapes.)
	const rate, n = 10.0, 10_000
	crit := ksCritical01(n)
	for _, k := range []float64{0.25, 1, 4} {
		sample := gaps(NewGamma(rate, k, seeded(uint64(k*1000)+1)), n)
		if d := ksStatistic(sample, gammaCDF(k, 1/(rate*k))); d > crit {
			t.Errorf("k=%v: KS D = %.4f against Gamma(k, 1/(λk)), above %.4f", k, d, crit)
		}
	}
	// Power: shapes 20 % off are rejected.
	sample := gaps(NewGamma(rate, 4, seeded(9)), n)
	for _, k := range []float64{3.2, 4.8} {
		if d := ksStatistic(sample, gammaCDF(k, 1/(rate*k))); d <= crit {
			t.Errorf("k=4 sample against k=%v: KS D = %.4f, want above %.4f", k, d, crit)
		}
	}
}
