package headroom

import (
	"math"
	"testing"
)

// TestDelivered: the bounds of the rate delivered above the objective come from the windows at
// or above it only: from their spread with five or more (Student's t), from Poisson counts with
// fewer; none without such a window.
func TestDelivered(t *testing.T) {
	t.Parallel()
	below := window{y: 100, n: 500, d: 10}
	// Five windows above, 150 to 170 requests in 10 s: mean 16/s, SD 0.79/s, SE 0.35/s; t at
	// 95 % with 4 degrees of freedom is 2.131847.
	ws := []window{below, {y: 200, n: 150, d: 10}, {y: 300, n: 160, d: 10}, {y: 250, n: 170, d: 10}, {y: 400, n: 155, d: 10}, {y: 500, n: 165, d: 10}}
	lo, hi := delivered(ws, 190, 0.95)
	if want := 16 - 2.131847*math.Sqrt(2.5/4/5); math.Abs(lo-want) > 1e-4 || math.Abs(hi-(32-want)) > 1e-4 {
		t.Errorf("five windows: [%v, %v], want [%v, %v]", lo, hi, want, 32-want)
	}
	// Two windows above: Poisson, (√310 ∓ 1.644854/2)² / 20.
	lo, hi = delivered(ws[:3], 190, 0.95)
	z := 1.6448536
	if wl, wh := math.Pow(math.Sqrt(310)-z/2, 2)/20, math.Pow(math.Sqrt(310)+z/2, 2)/20; math.Abs(lo-wl) > 1e-4 || math.Abs(hi-wh) > 1e-4 {
		t.Errorf("two windows: [%v, %v], want [%v, %v]", lo, hi, wl, wh)
	}
	if lo, hi := delivered([]window{below}, 190, 0.95); !math.IsInf(lo, 1) || !math.IsInf(hi, 1) {
		t.Errorf("no window above: [%v, %v], want unbounded", lo, hi)
	}
}
