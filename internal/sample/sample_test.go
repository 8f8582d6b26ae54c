package sample

import (
	"math"
	"strconv"
	"testing"
)

// TestFraction checks that the coin keeps the asked fraction of sequential ids within four
// standard deviations of the binomial, and that it is a pure function of (id, seed).
func TestFraction(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		fraction float64
		seed     uint64
	}{{0.1, 0}, {0.5, 7}, {0.01, 3}} {
		c := New(tc.fraction, tc.seed)
		kept := 0
		for i := range n {
			id := "req-" + strconv.Itoa(i)
			if c.Keep(id) {
				kept++
			}
			if c.Keep(id) != New(tc.fraction, tc.seed).Keep(id) {
				t.Fatalf("the coin is not a function of the id and the seed (%s)", id)
			}
		}
		mean := n * tc.fraction
		sd := math.Sqrt(n * tc.fraction * (1 - tc.fraction))
		if math.Abs(float64(kept)-mean) > 4*sd {
			t.Errorf("fraction %v seed %d kept %d of %d, want %.0f ± %.0f", tc.fraction, tc.seed, kept, n, mean, 4*sd)
		}
	}
}

func TestEdges(t *testing.T) {
	all, none := New(1, 0), New(0, 0)
	for i := range 1000 {
		id := strconv.Itoa(i)
		if !all.Keep(id) || none.Keep(id) {
			t.Fatalf("fraction 1 must keep and 0 must drop every id (%s)", id)
		}
	}
	// Different seeds choose different samples.
	a, b := New(0.5, 1), New(0.5, 2)
	same := 0
	for i := range 1000 {
		if a.Keep(strconv.Itoa(i)) == b.Keep(strconv.Itoa(i)) {
			same++
		}
	}
	if same > 600 {
		t.Errorf("seeds 1 and 2 agree on %d of 1000 ids; independent samples agree on ~500", same)
	}
}
