package loadtest

import (
	"testing"

	"github.com/llmtap/llmtap/shadow/loadgen"
)

// TestPhasesWarmupWorkerShare splits a closed loop of 8 in flight and a warmup of 2 requests
// across 4 workers: workers 0 and 1 warm up with one request each at their share of the
// concurrency, and workers 2 and 3, whose share of the warmup is no request, have no warmup
// (an empty share with no duration would have no end: loadgen's 0 is "no limit").
func TestPhasesWarmupWorkerShare(t *testing.T) {
	t.Parallel()
	for i, want := range []int{1, 1, 0, 0} {
		spec := &Spec{Worker: Worker{Index: i, Count: 4}, Schedule: loadgen.Config{Concurrency: 2, MaxRequests: 25}}
		if err := (Phases{Timeout: DefaultRequestTimeout}).Apply(spec, loadgen.ArrivalSpec{}, 8, 2, 1); err != nil {
			t.Fatal(err)
		}
		switch {
		case want == 0 && spec.Warmup != nil:
			t.Errorf("worker %d: a warmup of %d requests for %v, want none", i, spec.Warmup.MaxRequests, spec.Warmup.Duration)
		case want > 0 && (spec.Warmup == nil || spec.Warmup.MaxRequests != want || spec.Warmup.Concurrency != 2):
			t.Errorf("worker %d: warmup %+v, want %d request at concurrency 2", i, spec.Warmup, want)
		}
	}
}
