package stats

import "testing"

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
