package headroom

import (
	"math"
	"testing"
)

func TestIsotonic(t *testing.T) {
	t.Parallel()
	y := []float64{1, 3, 2, 4, 0, 5}
	isotonic(y, []float64{1, 1, 1, 1, 3, 1}, nil)
	// 3 and 2 pool to 2.5; then 4 (w 1) and 0 (w 3) pool to 1, below 2.5, so 3, 2, 4, 0 pool
	// to (3+2+4+0)/6 = 1.5, above 1: the first point stays.
	want := []float64{1, 1.5, 1.5, 1.5, 1.5, 5}
	for i := range y {
		if math.Abs(y[i]-want[i]) > 1e-12 {
			t.Fatalf("isotonic %v, want %v", y, want)
		}
	}
}

func TestFitRateReadsTheRateAtTheObjective(t *testing.T) {
	t.Parallel()
	// TTFT 100, 120, 200, 300 ms at 10, 12, 14, 15 requests/s: the objective 160 ms lies half
	// way between 12 and 14 requests/s.
	ws := []window{{x: 15, y: 300, c: 9, n: 10}, {x: 10, y: 100, c: 5, n: 10}, {x: 14, y: 200, c: 8, n: 10}, {x: 12, y: 120, c: 6, n: 10}}
	f := fitRate(ws, 160)
	if math.Abs(f.rate-13) > 1e-9 || math.Abs(f.concurrency-7) > 1e-9 || f.maxRate != 15 {
		t.Errorf("fit %+v, want rate 13, concurrency 7, max 15", f)
	}
	// Never reached: unbounded; reached at the lowest load already: 0.
	if f := fitRate(ws, 1000); !math.IsInf(f.rate, 1) {
		t.Errorf("objective above every window: %+v", f)
	}
	if f := fitRate(ws, 50); f.rate != 0 {
		t.Errorf("objective below every window: %+v", f)
	}
	// A window whose rate is high by chance at a low TTFT does not set the crossing alone:
	// the rate is fitted non-decreasing in TTFT, so it is pooled with the windows of higher
	// TTFT, (16 + 12 + 13) / 3.
	ws = []window{{x: 10, y: 100, n: 10}, {x: 16, y: 110, n: 10}, {x: 12, y: 150, n: 10}, {x: 13, y: 200, n: 10}}
	if f := fitRate(ws, 175); math.Abs(f.rate-41.0/3) > 1e-9 {
		t.Errorf("rate %v with a noisy window, want %v", f.rate, 41.0/3)
	}
}

func TestSmoothWindowsPoolsNeighbours(t *testing.T) {
	t.Parallel()
	ws := []window{{n: 10}, {n: 30}, {n: 20}, {n: 0}}
	smoothWindows(ws, []float64{10, 10, 10, 5})
	want := []float64{40.0 / 20, 60.0 / 30, 50.0 / 25, 20.0 / 15}
	for i := range ws {
		if math.Abs(ws[i].x-want[i]) > 1e-12 {
			t.Errorf("window %d: rate %v, want %v", i, ws[i].x, want[i])
		}
	}
}
