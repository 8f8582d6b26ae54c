package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPairedRatioCoverage: on pairs whose log ratios are an AR(1) series (memory 50 pairs, as
// drift makes them) around log 1.1, the batch-means interval at 90 % holds the truth in at
// least 85 % of 300 runs of 2,000 pairs (its miss rate, 10 % at most if valid, would be above
// 15 % with a chance under 1 % by the binomial). Seen failing without the AR(1) inflation of
// BatchMean (coverage 222 of 300).
func TestPairedRatioCoverage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	const runs, n = 300, 2000
	phi := math.Exp(-1.0 / 50)
	cover := 0
	for range runs {
		base, other := make([]float64, n), make([]float64, n)
		x := rng.NormFloat64()
		for i := range n {
			x = phi*x + math.Sqrt(1-phi*phi)*rng.NormFloat64()
			base[i] = 100 * math.Exp(0.5*rng.NormFloat64())
			other[i] = base[i] * 1.1 * math.Exp(0.2*x)
		}
		r := PairedRatio("x", base, other, Sym(0.10), 0.1)
		if r.Low <= 1.1 && 1.1 <= r.High {
			cover++
		}
	}
	t.Logf("coverage %d of %d", cover, runs)
	if cover < runs*85/100 {
		t.Errorf("the 90 %% interval covered the truth in %d of %d runs", cover, runs)
	}
}

// TestPairedRatioVerdicts: a side scaled by 1.2 is worse against a 10 % margin with the exact
// estimate, identical sides the same, ITL 5 → 6 ms never the same or not worse.
func TestPairedRatioVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	base := make([]float64, 1000)
	for i := range base {
		base[i] = 5 * math.Exp(0.3*rng.NormFloat64())
	}
	scaled := make([]float64, len(base))
	for i, x := range base {
		scaled[i] = x * 1.2
	}
	if r := PairedRatio("itl", base, scaled, Sym(0.01), 0.1); r.Outcome != Worse || math.Abs(r.Estimate-1.2) > 1e-9 {
		t.Errorf("scaled by 1.2: %s, estimate %v", r.Outcome, r.Estimate)
	}
	if r := PairedRatio("itl", base, base, Sym(0.01), 0.1); r.Outcome != Same {
		t.Errorf("identical: %s", r.Outcome)
	}
}

// TestCombinePolicies: the canary's policy lets an undecided alarm pass and is worse on a worse
// alarm; fidelity's is different on any difference.
func TestCombinePolicies(t *testing.T) {
	gate := Result{Name: "g", Count: 10, Outcome: NotWorse, Estimate: 1, Margin: 0.1}
	same := Result{Name: "s", Count: 10, Outcome: Same, Estimate: 1, Margin: 0.1}
	alarm := Result{Name: "a", Count: 10, Outcome: NotEnough, Alarm: true, Estimate: 1, Margin: 1}
	bad := Result{Name: "b", Count: 10, Outcome: Worse, Alarm: true, Estimate: 3, Margin: 1}
	better := Result{Name: "f", Count: 10, Outcome: Better, Estimate: 0.7, Margin: 0.1}
	for _, tc := range []struct {
		p    Policy
		rs   []Result
		want string
	}{
		{WorseDominates, []Result{gate, alarm}, NotWorse},
		{WorseDominates, []Result{same, alarm}, Same},
		{WorseDominates, []Result{same, better}, Better},
		{WorseDominates, []Result{same, bad}, Worse},
		{WorseDominates, []Result{{Count: 10, Outcome: NotEnough}, same}, NotEnough},
		{AnyDifference, []Result{same, better}, Different},
		{AnyDifference, []Result{same, gate}, NotEnough},
		{AnyDifference, []Result{same, alarm}, Same},
	} {
		if got, _ := Combine(tc.p, tc.rs); got != tc.want {
			t.Errorf("%v %v: %s, want %s", tc.p, tc.rs, got, tc.want)
		}
	}
}
