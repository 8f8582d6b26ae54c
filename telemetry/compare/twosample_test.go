package compare

import (
	"math/rand/v2"
	"testing"
)

// TestTiesAreSame: samples whose values all tie (a fixed prompt length) are the same, paired or
// not, and a fixed length 12 % longer is higher when paired.
func TestTiesAreSame(t *testing.T) {
	t.Parallel()
	fixed := func(v float64, n int) Sample {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = v
		}
		return NewSample(xs)
	}
	lv := Levels{Differ: 0.05 / 18, Same: 0.05}
	if r := QuantileRatio("x", fixed(64, 500), fixed(64, 500), 0.5, lv, 0.1, 0.5); r.Outcome != Same {
		t.Errorf("independent ties: %s [%v, %v]", r.Outcome, r.Low, r.High)
	}
	if r := PairedQuantileRatio("x", fixed(64, 500), fixed(64, 500), 0.9, lv, 0.1, 0.5); r.Outcome != Same {
		t.Errorf("paired ties: %s [%v, %v]", r.Outcome, r.Low, r.High)
	}
	if r := PairedQuantileRatio("x", fixed(64, 500), fixed(72, 500), 0.5, lv, 0.1, 0.5); r.Outcome != Worse {
		t.Errorf("paired ties 12.5 %% longer: %s [%v, %v]", r.Outcome, r.Low, r.High)
	}
}

// TestPairedNarrowerThanIndependent: when the two sides share most of each request's value
// (its length), the paired interval is much narrower than the independent one, and both cover
// the true ratio.
func TestPairedNarrowerThanIndependent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	n := 2000
	a, b := make([]float64, n), make([]float64, n)
	for i := range a {
		length := 50 + 400*rng.ExpFloat64()
		a[i] = length * (1 + 0.05*rng.NormFloat64())
		b[i] = 1.05 * length * (1 + 0.05*rng.NormFloat64())
	}
	lv := Levels{Differ: 0.05, Same: 0.05}
	ind := QuantileRatio("x", NewSample(a), NewSample(b), 0.5, lv, 0.1, 0)
	par := PairedQuantileRatio("x", NewSample(a), NewSample(b), 0.5, lv, 0.1, 0)
	if !(par.High-par.Low < (ind.High-ind.Low)/3) {
		t.Errorf("paired [%v, %v] not much narrower than independent [%v, %v]", par.Low, par.High, ind.Low, ind.High)
	}
	for _, r := range []Result{ind, par} {
		if !(r.Low < 1.05 && 1.05 < r.High) {
			t.Errorf("[%v, %v] does not cover 1.05", r.Low, r.High)
		}
	}
}
