package bench

import (
	"context"
	"testing"
	"time"

	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestPhasesWarmupWorkerShare splits a closed loop of 8 in flight and a warmup of 2 requests
// across 4 workers: workers 0 and 1 warm up with one request each at their share of the
// concurrency, and workers 2 and 3, whose share of the warmup is no request, have no warmup
// (an empty share with no duration would have no end: loadgen's 0 is "no limit").
func TestPhasesWarmupWorkerShare(t *testing.T) {
	t.Parallel()
	for i, want := range []int{1, 1, 0, 0} {
		spec := &Spec{Worker: Worker{Index: i, Count: 4}, Schedule: gen.Config{Concurrency: 2, MaxRequests: 25}}
		if err := (Phases{Timeout: DefaultRequestTimeout}).Apply(spec, gen.ArrivalSpec{}, 8, 2, 1); err != nil {
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

// TestPhasesRateRampArrivalsRise: under RateRamp the server receives fewer requests in the
// ramp's first second than in its second, and those fewer than at the target rate after it.
// Counts, with wide margins, not timing: at 100 req/s ramped over 2 s from 5 req/s the
// expected counts per second are about 26, 74 and 100.
func TestPhasesRateRampArrivalsRise(t *testing.T) {
	t.Parallel()
	mock, url := startMock(t)
	spec := &Spec{Class: record.ClassBench, BaseURL: url, Dir: t.TempDir(), Schedule: gen.Config{Duration: 3 * time.Second, MaxInFlight: -1},
		Build: func(n int) (Request, error) { return Request{Path: "/v1/chat/completions", Body: chatBody(n, 2)}, nil }}
	arr := gen.ArrivalSpec{Rate: 100, Pattern: gen.PatternConstant}
	if err := (Phases{RateRamp: 2, Timeout: DefaultRequestTimeout}).Apply(spec, arr, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), *spec); err != nil {
		t.Fatal(err)
	}
	at := mock.Arrivals()
	if len(at) == 0 {
		t.Fatal("the mock saw no request")
	}
	var per [3]int
	for _, a := range at {
		if s := int(a.Sub(at[0]) / time.Second); s < 3 {
			per[s]++
		}
	}
	t.Logf("arrivals per second at the mock: %v (expected about 26, 74, 100)", per)
	if !(per[0] < per[1] && per[1] < per[2]) || per[0] > 45 || per[2] < 80 {
		t.Errorf("arrivals per second %v: want a rise from about 26 to 100", per)
	}
}
