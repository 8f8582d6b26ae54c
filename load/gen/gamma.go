package gen

import (
	"math"
	"math/rand/v2"
	"time"
)

// Gamma arrivals at rate λ with smoothness k: inter-arrival gaps are independent and
// gamma-distributed with shape k and scale θ = 1/(λk), so
//
//	mean = kθ = 1/λ,   variance = kθ² = 1/(kλ²),   CV = 1/√k.
//
// k = 1 is exactly Poisson; k < 1 is burstier (many short gaps, a few long ones: k = 0.25 gives
// CV 2); k > 1 is smoother, tending to [Constant] as k grows (k = 4 gives CV 0.5). This is
// AIPerf's --arrival-pattern gamma with --arrival-smoothness k, identical to vLLM's
// --burstiness.
type Gamma struct {
	rate  float64
	scale float64
	g     gammaSampler
	rng   *rand.Rand
	t     float64 // seconds since start
}

// NewGamma returns gamma arrivals at rate requests per second with smoothness (shape) k,
// drawn from rng. Both must be positive and finite; [ArrivalSpec] validates them for callers
// that take them from a user.
func NewGamma(rate, k float64, rng *rand.Rand) *Gamma {
	return &Gamma{rate: rate, scale: 1 / (rate * k), g: newGammaSampler(k), rng: rng}
}

// Next returns the next intended send time, one gamma gap after the previous one.
func (g *Gamma) Next() time.Duration {
	g.t += g.g.sample(g.rng) * g.scale
	return seconds(g.t)
}

// gammaSampler draws Gamma(k, 1) variates by Marsaglia and Tsang's method ("A simple method for
// generating gamma variables", ACM TOMS 26(3), 2000). For k ≥ 1, with d = k − 1/3 and
// c = 1/√(9d), it draws x ~ N(0,1), sets v = (1 + cx)³, and accepts dv when v > 0 and
// ln U < x²/2 + d − dv + d·ln v (with the cheap squeeze U < 1 − 0.0331x⁴ first); the acceptance
// rate is above 95 % for every k ≥ 1. For k < 1 it uses the boost Gamma(k) = Gamma(k+1)·U^(1/k),
// computed in logarithms so that tiny k underflows gracefully to a zero gap.
type gammaSampler struct {
	d, c float64
	// invK is 1/k when k < 1 (the boost is needed), else 0.
	invK float64
}

func newGammaSampler(k float64) gammaSampler {
	var s gammaSampler
	if k < 1 {
		s.invK = 1 / k
		k++
	}
	s.d = k - 1.0/3
	s.c = 1 / math.Sqrt(9*s.d)
	return s
}

func (s gammaSampler) sample(rng *rand.Rand) float64 {
	var g float64
	for {
		x := rng.NormFloat64()
		v := 1 + s.c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64() // (0, 1]: ln u is finite
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+s.d*(1-v+math.Log(v)) {
			g = s.d * v
			break
		}
	}
	if s.invK != 0 {
		u := 1 - rng.Float64()
		g = math.Exp(math.Log(g) + math.Log(u)*s.invK)
	}
	return g
}
