package compare

import (
	"encoding/json"
	"math"
)

// Policy is how a panel of comparisons makes one decision.
type Policy int

const (
	// WorseDominates is a rollout gate's (the canary verdict): Worse when any comparison is
	// worse (an Alarm included); otherwise NotEnough while any comparison that is not an
	// Alarm is undecided; otherwise Better when one is better and the rest the same, Same
	// when every one is the same, NotWorse when every upper end is inside its margin.
	WorseDominates Policy = iota
	// AnyDifference is a reproduction check's (the replay fidelity verdict): Different when
	// any comparison is better or worse; otherwise NotEnough while any comparison that is not
	// an Alarm is undecided or only not worse; otherwise Same.
	AnyDifference
)

// Combine is the panel's decision by policy p and the comparison furthest from equal (by its
// point estimate against its margin, Divergence) among those that decided it: the worse ones
// when the panel is worse, the differing ones when it is different, the undecided ones when an
// AnyDifference panel cannot tell; comparisons over no values are left out.
func Combine(p Policy, rs []Result) (outcome, diverged string) {
	worst, worstBad, worstDiff, worstOpen := -1.0, -1.0, -1.0, -1.0
	var bad, differs, open string
	counts := map[string]int{}
	compared := 0
	for _, r := range rs {
		if r.Count == 0 {
			continue // a metric neither side has (ITL of single-token answers) is not compared
		}
		compared++
		d := r.Divergence()
		if d > worst {
			worst, diverged = d, r.Name
		}
		if r.Outcome == Worse && d > worstBad {
			worstBad, bad = d, r.Name
		}
		if (r.Outcome == Worse || r.Outcome == Better) && d > worstDiff {
			worstDiff, differs = d, r.Name
		}
		if !r.Alarm && (r.Outcome == NotEnough || r.Outcome == NotWorse) && d > worstOpen {
			worstOpen, open = d, r.Name
		}
		if r.Alarm && r.Outcome != Worse && r.Outcome != Better {
			continue
		}
		if r.Alarm && r.Outcome == Better && p == WorseDominates {
			continue
		}
		counts[r.Outcome]++
	}
	if compared == 0 {
		return NotEnough, diverged
	}
	switch p {
	case AnyDifference:
		switch {
		case counts[Worse]+counts[Better] > 0:
			return Different, differs
		case counts[NotEnough]+counts[NotWorse] > 0 || counts[Same] == 0:
			if open != "" {
				return NotEnough, open
			}
			return NotEnough, diverged
		}
		return Same, diverged
	default:
		switch {
		case counts[Worse] > 0:
			return Worse, bad
		case counts[NotEnough] > 0:
			return NotEnough, diverged
		case counts[NotWorse] > 0:
			return NotWorse, diverged
		case counts[Better] > 0:
			return Better, diverged
		case counts[Same] > 0:
			return Same, diverged
		}
		return NotEnough, diverged
	}
}

// resultJSON is Result on the wire: an interval end that cannot be bounded (±Inf, which JSON
// cannot hold) is null.
type resultJSON struct {
	Name        string   `json:"name"`
	Live        float64  `json:"live"`
	Mirror      float64  `json:"mirror"`
	Estimate    *float64 `json:"estimate"`
	Low         *float64 `json:"low"`
	High        *float64 `json:"high"`
	Margin      float64  `json:"margin"`
	Count       int      `json:"count"`
	Verdict     string   `json:"verdict"`
	PairsNeeded int      `json:"pairs_needed"`
	// Difference says the estimate and interval are a difference mirror − live (a rate),
	// not a ratio mirror/live.
	Difference bool `json:"difference,omitempty"`
}

// Finite is x, or nil for an end that cannot be bounded (±Inf, NaN).
func Finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// OrInf is *p, or ±Inf (by sign) for nil.
func OrInf(p *float64, sign int) float64 {
	if p == nil {
		return math.Inf(sign)
	}
	return *p
}

// MarshalJSON writes unbounded interval ends (and an unbounded estimate) as null.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{Name: r.Name, Live: r.Base, Mirror: r.Other,
		Estimate: Finite(r.Estimate), Low: Finite(r.Low), High: Finite(r.High), Margin: r.Margin,
		Count: r.Count, Verdict: r.Outcome, PairsNeeded: r.Needed, Difference: r.Difference})
}

// UnmarshalJSON reads null interval ends as −Inf (low) and +Inf (high, estimate). Alarm is
// not on the wire.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w resultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result{Name: w.Name, Base: w.Live, Other: w.Mirror, Estimate: OrInf(w.Estimate, 1),
		Low: OrInf(w.Low, -1), High: OrInf(w.High, 1), Margin: w.Margin, Count: w.Count,
		Outcome: w.Verdict, Needed: w.PairsNeeded, Difference: w.Difference}
	return nil
}
