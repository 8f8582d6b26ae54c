package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

// countIn counts arrivals per one-second bucket until End or until horizon.
func countIn(a Arrivals, horizon time.Duration) (counts []int, total int) {
	counts = make([]int, int(horizon/time.Second))
	var prev time.Duration
	for {
		at := a.Next()
		if at == End || at >= horizon {
			return counts, total
		}
		if at < prev {
			panic("arrivals went backwards")
		}
		prev = at
		counts[at/time.Second]++
		total++
	}
}

func TestRateSeriesCounts(t *testing.T) {
	// A ramp up, a plateau, a drop to zero, a gap, a ramp from zero and a ramp down to zero,
	// which ends the schedule. Λ over the whole series is 1500 + 2500 + 0.125 + 0 + 250 + 625 + 750
	// = 5625.125.
	points := []RatePoint{
		{0, 50}, {10 * time.Second, 250}, {20 * time.Second, 250}, {20*time.Second + time.Millisecond, 0},
		{25 * time.Second, 0}, {30 * time.Second, 100}, {35 * time.Second, 150}, {45 * time.Second, 0},
	}
	const horizon = 50 * time.Second
	cases := []struct {
		name  string
		shape Shape
		// slack is how far a one-second count may be from its expectation μ, and what the total
		// may be off by.
		slack      func(mu float64) float64
		total      func(lambda float64) float64
		totalSlack float64
		why        string
	}{
		{"poisson", ShapePoisson, func(mu float64) float64 { return 4*math.Sqrt(mu) + 1 },
			func(l float64) float64 { return l }, 4 * math.Sqrt(5625),
			"counts are Poisson(μ): four standard deviations, plus one for tiny μ"},
		{"constant", ShapeConstant, func(float64) float64 { return 1 }, math.Ceil, 0,
			"request n is due where Λ passes n, so a window holds μ rounded up or down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRateSeries(points, c.shape, seeded(11))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Expected(horizon); math.Abs(got-5625.125) > 1e-6 {
				t.Fatalf("Λ(%v) = %v, want 5625.125", horizon, got)
			}
			counts, total := countIn(r, horizon)
			for i, got := range counts {
				lo, hi := time.Duration(i)*time.Second, time.Duration(i+1)*time.Second
				mu := r.Expected(hi) - r.Expected(lo)
				if math.Abs(float64(got)-mu) > c.slack(mu) {
					t.Errorf("[%v, %v): %d arrivals, expected %.1f (%s)", lo, hi, got, mu, c.why)
				}
			}
			if want := c.total(5625.125); math.Abs(float64(total)-want) > c.totalSlack {
				t.Errorf("%d arrivals in all, want %.0f ± %.0f", total, want, c.totalSlack)
			}
			if at := r.Next(); at != End {
				t.Errorf("arrival at %v after the rate fell to zero for good, want End", at)
			}
		})
	}
}

func TestRateSeriesSkipsZeroRate(t *testing.T) {
	// Nothing may be scheduled while the rate is zero: the first deterministic arrival (Λ = 0)
	// is where the rate first becomes positive, not at the start.
	r, err := NewRateSeries([]RatePoint{{0, 0}, {2 * time.Second, 0}, {3 * time.Second, 10}}, ShapeConstant, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at := r.Next(); at != 2*time.Second {
		t.Fatalf("first arrival at %v, want 2s, where the rate starts rising", at)
	}
	// Then Λ(2s+u) = 5u², so request n is at 2s + √(n/5).
	for n := 1; n <= 5; n++ {
		want := 2*time.Second + time.Duration(math.Round(math.Sqrt(float64(n)/5)*1e9))
		if got := r.Next(); got != want {
			t.Errorf("request %d at %v, want %v", n, got, want)
		}
	}
}

func TestRateSeriesOnePointIsConstant(t *testing.T) {
	// A steady rate with the deterministic shape is the Constant process, to the nanosecond.
	r, err := NewRateSeries([]RatePoint{{0, 7}}, ShapeConstant, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstant(7)
	for n := range 1000 {
		if got, want := r.Next(), c.Next(); got != want {
			t.Fatalf("request %d at %v, want %v as Constant", n, got, want)
		}
	}
}

func TestRampCounts(t *testing.T) {
	// A linear ramp from 20/s to 220/s over 10 s then steady: Λ(t) = 20t + 10t² up to 10 s.
	r, err := NewRamp(20, 220, 10*time.Second, ShapePoisson, seeded(12))
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := countIn(r, 12*time.Second)
	for i, got := range counts {
		lo, hi := float64(i), float64(i+1)
		lam := func(t float64) float64 {
			if t <= 10 {
				return 20*t + 10*t*t
			}
			return 1200 + 220*(t-10)
		}
		mu := lam(hi) - lam(lo)
		if math.Abs(float64(got)-mu) > 4*math.Sqrt(mu) {
			t.Errorf("second %d: %d arrivals, want %.0f within 4σ", i, got, mu)
		}
	}
}

func TestRateSeriesErrors(t *testing.T) {
	sec := time.Second
	cases := []struct {
		name   string
		points []RatePoint
		want   []string // every one must appear: problems are reported together
	}{
		{"empty: nothing to follow", nil, []string{"no points"}},
		{"late start: the rate before the first point is undefined", []RatePoint{{sec, 1}}, []string{"want the first point at 0"}},
		{"repeated time: a step needs two distinct points", []RatePoint{{0, 1}, {sec, 1}, {sec, 2}}, []string{"point 2 at 1s is not after point 1"}},
		{"negative rate", []RatePoint{{0, -1}}, []string{"rate -1 is not"}},
		{"NaN rate", []RatePoint{{0, math.NaN()}}, []string{"rate NaN is not"}},
		{"infinite rate", []RatePoint{{0, math.Inf(1)}}, []string{"rate +Inf is not"}},
		{"several problems at once", []RatePoint{{sec, -1}, {0, 1}}, []string{"first point at 0", "rate -1", "point 1 at 0s is not after"}},
	}
	for _, c := range cases {
		_, err := NewRateSeries(c.points, ShapeConstant, nil)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
	if _, err := NewRamp(1, 2, 0, ShapeConstant, nil); err == nil {
		t.Error("a ramp over no time was accepted")
	}
	if _, err := NewRateSeries([]RatePoint{{0, 1}}, ShapePoisson, nil); err == nil {
		t.Error("a Poisson series without a random source was accepted")
	}
}

func FuzzRateSeries(f *testing.F) {
	// Whatever the points, a valid series yields non-negative, non-decreasing times, and End
	// only at the end.
	f.Add(int64(0), 10.0, int64(1e9), 100.0, int64(2e9), 0.0, false)
	f.Add(int64(0), 0.0, int64(1), 0.0, int64(2), 1e-9, true)
	f.Add(int64(0), 1e12, int64(5e8), 1e-12, int64(1e18), 3.0, true)
	f.Fuzz(func(t *testing.T, t0 int64, r0 float64, t1 int64, r1 float64, t2 int64, r2 float64, poisson bool) {
		shape := ShapeConstant
		if poisson {
			shape = ShapePoisson
		}
		pts := []RatePoint{{time.Duration(t0), r0}, {time.Duration(t1), r1}, {time.Duration(t2), r2}}
		r, err := NewRateSeries(pts, shape, seeded(1))
		if err != nil {
			return
		}
		var prev time.Duration
		for range 200 {
			at := r.Next()
			if at == End {
				return
			}
			if at < prev {
				t.Fatalf("arrival at %v after %v (points %v)", at, prev, pts)
			}
			prev = at
		}
	})
}
