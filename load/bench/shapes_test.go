package bench

import (
	"testing"

	"github.com/llmtap/llmtap/load/workload"
)

// TestShapesMode: the folder part of each kind of benchmark run, as AIPerf names it.
func TestShapesMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s           Shapes
		conc        int
		rate        float64
		want        string
		active, ucr bool
	}{
		{Shapes{}, 4, 0, "concurrency4", false, false},
		{Shapes{}, 0, 2.5, "request_rate2.5", false, false},
		{Shapes{}, 8, 10, "request_rate10-concurrency8", false, false},
		{Shapes{UserRate: 3, Users: 2}, 0, 0, "user_centric_rate3", true, true},
		{Shapes{TurnsSet: true}, 1, 0, "concurrency1", true, false},
	} {
		if got := tc.s.Mode(tc.conc, tc.rate); got != tc.want || tc.s.Active() != tc.active || tc.s.UserCentric() != tc.ucr {
			t.Errorf("%+v: mode %q active %v user-centric %v, want %q %v %v", tc.s, got, tc.s.Active(), tc.s.UserCentric(), tc.want, tc.active, tc.ucr)
		}
	}
}

// TestPrompts: a run of fewer requests than entries builds only as many bodies, each of the
// asked prompt length, and reports the longest body.
func TestPrompts(t *testing.T) {
	t.Parallel()
	body := workload.BodySpec{Endpoint: workload.EndpointChat, Model: "m", Stream: true}
	lengths := workload.Pair{ISL: workload.Normal{Mean: 20}}
	for _, tc := range []struct{ entries, count, want int }{{10, 3, 3}, {10, 0, 10}, {2, 5, 2}} {
		pool, maxBody, err := Prompts(nil, lengths, body, 1, tc.entries, tc.count)
		if err != nil || len(pool) != tc.want {
			t.Fatalf("entries %d count %d: %d bodies (%v), want %d", tc.entries, tc.count, len(pool), err, tc.want)
		}
		longest := 0
		for _, b := range pool {
			longest = max(longest, len(b))
		}
		if maxBody != longest || longest == 0 {
			t.Errorf("entries %d count %d: maxBody %d, longest body %d", tc.entries, tc.count, maxBody, longest)
		}
	}
}
