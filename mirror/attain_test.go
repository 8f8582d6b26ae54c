package mirror

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// TestVerdictSLOAttainment: pairs whose records carry the handler's SLOs (a real slo.Set) are
// judged by the SLO that selects the live request (by its model and tenant, which the mirror
// record lacks), whichever record comes first; the verdict compares the attainments, live
// 1.0 beside mirror 0.7, and calls it worse. Records of a tenant no SLO selects get none.
func TestVerdictSLOAttainment(t *testing.T) {
	t.Parallel()
	set := slo.NewTracker(nil, nil).NewSet([]slo.Objective{
		{Name: "gold", Tenants: []string{"acme"}, TTFTMs: 100},
		{Name: "rest", Models: []string{"other"}, TTFTMs: 1},
	})
	p := NewPairer(0, 0)
	const n = 200
	for i := range n {
		id := fmt.Sprint(i)
		p.Expect(id)
		live := rec(id, record.ClassLive, "m", 50, 5, 400, "")
		live.Tenant = "acme"
		mttft := 50.0
		if i%10 < 3 {
			mttft = 150 // misses the 100 ms TTFT objective
		}
		mir := rec(id, record.ClassMirror, "m", mttft, 5, 400, "")
		if i%2 == 0 {
			p.ConsumeJudged(live, set)
			p.ConsumeJudged(mir, set)
		} else {
			p.ConsumeJudged(mir, set)
			p.ConsumeJudged(live, set)
		}
	}
	pairs := p.Pairs()
	if len(pairs) != n || pairs[0].SLO != "gold" || pairs[0].Live.SLOMet == nil || !*pairs[0].Live.SLOMet || *pairs[0].Mirror.SLOMet {
		t.Fatalf("pairs %d, first %+v", len(pairs), pairs[0])
	}
	vs := p.Verdicts()
	if len(vs) != 1 {
		t.Fatalf("verdicts %+v", vs)
	}
	var got *MetricVerdict
	for i, c := range vs[0].Comparisons {
		if c.Name == SLOAttainment {
			got = &vs[0].Comparisons[i]
		}
	}
	if got == nil {
		t.Fatalf("no %s comparison in %+v", SLOAttainment, vs[0].Comparisons)
	}
	if got.Base != 1 || got.Other != 0.7 || got.Count != n || got.Outcome != VerdictWorse || !(got.High < 0) || !(got.Estimate < -0.29 && got.Estimate > -0.31) {
		t.Errorf("slo attainment %+v: want live 1, mirror 0.7 over %d pairs, worse", *got, n)
	}
	if vs[0].Outcome != VerdictWorse {
		t.Errorf("verdict %s, want worse", vs[0].Outcome)
	}

	// A tenant no SLO selects: no attainment, no comparison.
	q := NewPairer(0, 0)
	for i := range n {
		id := fmt.Sprint(i)
		q.Expect(id)
		live := rec(id, record.ClassLive, "m", 50, 5, 400, "")
		live.Tenant = "other-tenant"
		q.ConsumeJudged(live, set)
		q.Consume(rec(id, record.ClassMirror, "m", 50, 5, 400, ""))
	}
	for _, c := range q.Verdicts()[0].Comparisons {
		if c.Name == SLOAttainment {
			t.Errorf("an SLO comparison without a selecting SLO: %+v", c)
		}
	}
}

// TestVerdictOwnSLO: objectives named in the verdict options judge every pair, over the
// handler's SLOs the records carry, and records with none at all; a bad objective is refused.
func TestVerdictOwnSLO(t *testing.T) {
	t.Parallel()
	if err := (VerdictOptions{SLO: "time_to_first_token:fast"}).Validate(); err == nil || !strings.Contains(err.Error(), "slo") {
		t.Errorf("a bad verdict slo: %v", err)
	}
	set := slo.NewTracker(nil, nil).NewSet([]slo.Objective{{Name: "loose", TTFTMs: 1000}})
	p := NewPairer(0, 0)
	p.SetVerdict("k", VerdictOptions{FirstLook: 20, Looks: 1, SLO: "time_to_first_token:100"})
	for i := range 20 {
		id := fmt.Sprint(i)
		p.Expect(id)
		live := rec(id, record.ClassLive, "m", 50, 5, 400, "")
		var handler *slo.Set
		if i%2 == 0 {
			handler = set // the handler's looser SLO: the verdict's own wins
		}
		p.ConsumeJudged(live, handler)
		p.Consume(rec(id, record.ClassMirror, "m", 150, 5, 400, ""))
	}
	vs := p.Verdicts()
	var got *MetricVerdict
	for i, c := range vs[0].Comparisons {
		if c.Name == SLOAttainment {
			got = &vs[0].Comparisons[i]
		}
	}
	if got == nil || got.Base != 1 || got.Other != 0 || got.Count != 20 {
		t.Errorf("slo attainment %+v: want live 1, mirror 0 over 20 pairs by the verdict's TTFT ≤ 100 ms", got)
	}
	if ps := p.Pairs(); ps[0].SLO != "verdict" {
		t.Errorf("pair judged by %q, want the verdict's objectives", ps[0].SLO)
	}
}

// TestVerdictDriftOptions: the drift allowance's bounds, and "off" (negative) allows none.
func TestVerdictDriftOptions(t *testing.T) {
	for _, tc := range []struct {
		o    VerdictOptions
		want string
	}{
		{VerdictOptions{Drift: 1}, "drift 1: must be below 1"},
		{VerdictOptions{Drift: math.NaN()}, "drift NaN"},
		{VerdictOptions{DriftMemory: -1}, "drift_memory -1"},
		{VerdictOptions{DriftMemory: MaxVerdictPairs + 1}, "drift_memory 102401"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to say %q", tc.o, err, tc.want)
		}
	}
	if err := (VerdictOptions{Drift: -1, DriftMemory: 50}).Validate(); err != nil {
		t.Errorf("drift off: %v", err)
	}
	if d := (VerdictOptions{}).withDefaults().speedDrift(); d.SD != DefaultVerdictDrift || d.Memory != DefaultVerdictDriftMemory {
		t.Errorf("default allowance %+v", d)
	}
	if d := (VerdictOptions{Drift: -1}).withDefaults().speedDrift(); d.SD != 0 {
		t.Errorf("drift off: allowance %+v, want none", d)
	}
}
