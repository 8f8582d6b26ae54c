package gen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRateRampFollowsAIPerfsSteps checks the ramp's rate against AIPerf's ramper: start at
// target × 0.1/duration, a new rate every 0.1 s on the line from start to target, the target
// from the duration on.
func TestRateRampFollowsAIPerfsSteps(t *testing.T) {
	r, err := NewRateRamp(ArrivalSpec{Pattern: PatternConstant, Rate: 100}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := 100 * 0.1 / 10 // 1 req/s
	for _, c := range []struct{ t, want float64 }{
		{0, start}, {0.099, start},
		{0.1, start + (100-start)*0.1/10},
		{5.05, start + (100-start)*5.0/10},
		{9.99, start + (100-start)*9.9/10},
		{10, 100}, {60, 100},
	} {
		if got := r.RateAt(c.t); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("RateAt(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// TestRateRampGapsAreDrawnAtTheRateInForce: with a constant pattern each gap is 1/rate at the
// previous release, the first at the start rate (AIPerf draws the first interval after its
// ramper set the start rate).
func TestRateRampGapsAreDrawnAtTheRateInForce(t *testing.T) {
	r, err := NewRateRamp(ArrivalSpec{Pattern: PatternConstant, Rate: 10}, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Next(); got != 0 {
		t.Fatalf("first arrival at %v, want 0 (the constant pattern's first)", got)
	}
	// Start rate 10 × 0.1/2 = 0.5 req/s: the second request 2 s later, at the ramp's end.
	if got := r.Next(); got != 2*time.Second {
		t.Fatalf("second arrival at %v, want 2s", got)
	}
	// From then on the target: 0.1 s apart.
	if got := r.Next(); got != 2100*time.Millisecond {
		t.Fatalf("third arrival at %v, want 2.1s", got)
	}
}

// TestRateRampCountsRise: Poisson arrivals under a ramp come fewer early than late, and the
// count over the ramp is near the integral of the rate.
func TestRateRampCountsRise(t *testing.T) {
	r, err := NewRateRamp(ArrivalSpec{Rate: 200}, 10*time.Second, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var first, last, all int
	for {
		at := r.Next()
		if at >= 10*time.Second {
			break
		}
		all++
		switch {
		case at < 2*time.Second:
			first++
		case at >= 8*time.Second:
			last++
		}
	}
	// ∫ rate over [0,10) ≈ 10 × (2 + 200)/2 ≈ 1010 (the steps lower it by ≈ half a step's
	// share), over [0,2) ≈ 42, over [8,10) ≈ 362.
	if first > 80 || last < 300 || all < 900 || all > 1100 {
		t.Errorf("arrivals: %d in the first 2 s, %d in the last 2 s, %d in all", first, last, all)
	}
}

func TestConcurrencyStep(t *testing.T) {
	for _, c := range []struct {
		k, target int
		over      time.Duration
		want      time.Duration
	}{
		{0, 4, 3 * time.Second, 0},
		{1, 4, 3 * time.Second, time.Second},
		{3, 4, 3 * time.Second, 3 * time.Second},
		{1, 1, 3 * time.Second, 0},
		{2, 4, 0, 0},
	} {
		if got := ConcurrencyStep(c.k, c.target, c.over); got != c.want {
			t.Errorf("ConcurrencyStep(%d, %d, %v) = %v, want %v", c.k, c.target, c.over, got, c.want)
		}
	}
}
