package stats

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestUsageMerge: merging two rows sums every counter and recomputes the per-million figures
// from the sums (not from the rows' own figures).
func TestUsageMerge(t *testing.T) {
	t.Parallel()
	a := Usage{Requests: 2, Errors: 1, InputTokens: 300_000, OutputTokens: 200_000, CachedInputTokens: 10,
		CacheWriteInputTokens: 20, ReasoningOutputTokens: 30, EnergyJ: 1.5, GPUSeconds: 2, Cost: 1, ListCost: 4}
	a.perMillion()
	b := Usage{Requests: 3, InputTokens: 400_000, OutputTokens: 100_000, CachedInputTokens: 1,
		CacheWriteInputTokens: 2, ReasoningOutputTokens: 3, EnergyJ: 0.5, GPUSeconds: 1, Cost: 3, ListCost: 2}
	a.Merge(b)
	want := Usage{Requests: 5, Errors: 1, InputTokens: 700_000, OutputTokens: 300_000, CachedInputTokens: 11,
		CacheWriteInputTokens: 22, ReasoningOutputTokens: 33, EnergyJ: 2, GPUSeconds: 3, Cost: 4, ListCost: 6,
		CostPerMillionTokens: 4, ListCostPerMillionTokens: 6}
	if a != want {
		t.Errorf("merged %+v\nwant   %+v", a, want)
	}
}

// TestUsageSaturates: cost and energy sums that would pass the largest float64 stay at it,
// so that the JSON summary (encoding/json refuses +Inf) still encodes; before, three records
// at a list price of 1e308 made GET /llmtap/summary answer 500 from then on.
func TestUsageSaturates(t *testing.T) {
	t.Parallel()
	var u Usage
	r := &record.Record{InputTokens: 1_000_000, OutputTokens: 1, ListCost: &record.Cost{Total: math.MaxFloat64 / 2},
		Cost: &record.Cost{Total: math.MaxFloat64}, GPU: &record.GPUUsage{EnergyJ: math.MaxFloat64, GPUSeconds: math.Inf(1)}}
	for range 3 {
		u.add(r)
	}
	u.perMillion()
	if _, err := json.Marshal(u); err != nil {
		t.Fatalf("the row of three records does not encode: %v (%+v)", err, u)
	}
	if u.ListCost != math.MaxFloat64 || u.Cost != math.MaxFloat64 {
		t.Errorf("sums %v %v, want the largest float64", u.ListCost, u.Cost)
	}
	big := Usage{InputTokens: 1, Cost: math.MaxFloat64, ListCost: math.MaxFloat64, EnergyJ: math.MaxFloat64, GPUSeconds: math.MaxFloat64}
	big.Merge(big)
	if _, err := json.Marshal(big); err != nil {
		t.Fatalf("two merged rows do not encode: %v (%+v)", err, big)
	}
}
