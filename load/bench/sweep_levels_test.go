package bench

import (
	"fmt"
	"strings"
	"testing"
)

// TestSweepMode: the base folder names of AIPerf's orchestrator for a sweep, one level, a
// rate with and without a level.
func TestSweepMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		levels []int
		rate   float64
		want   string
	}{
		{[]int{1, 4, 16}, 0, "concurrency_sweep"},
		{[]int{4}, 0, "concurrency4"},
		{[]int{2, 8}, 2.5, "request_rate2.5-concurrency_sweep"},
		{[]int{8}, 10, "request_rate10-concurrency8"},
		{nil, 10, "request_rate10"},
		{nil, 0, "concurrency0"},
	} {
		if got := SweepMode(tc.levels, tc.rate); got != tc.want {
			t.Errorf("SweepMode(%v, %v) = %q, want %q", tc.levels, tc.rate, got, tc.want)
		}
	}
}

// TestSweepRunsAndLevels: every bad setting is named at once; a good one becomes the sweep;
// ParseLevels refuses repeats and non-positive sweep values but takes one value as it is.
func TestSweepRunsAndLevels(t *testing.T) {
	t.Parallel()
	_, err := SweepRuns{Runs: 11, Confidence: 1, Mode: "both", RunCooldown: -1}.Sweep("b", nil, 1, 2)
	for _, want := range []string{"--num-profile-runs 11", "--confidence-level 1", "--parameter-sweep-mode", "--profile-run-cooldown-seconds -1", "--worker-count"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	sw, err := SweepRuns{Runs: 3, Confidence: 0.9, Mode: "independent", SweepCooldown: 2}.Sweep("b", []int{1, 2}, 7, 1)
	if err != nil || !sw.Independent || !sw.WarmupAfterFirst || sw.SweepCooldown.Seconds() != 2 || sw.Seed != 7 || sw.Runs != 3 {
		t.Errorf("sweep %+v, %v", sw, err)
	}
	for s, want := range map[string]string{"1,4,16": "[1 4 16] <nil>", " 0": "[0] <nil>", "0,2": "[] sweep value 0: every value must be at least 1",
		"2,2": "[] sweep value 2 is repeated: its runs would overwrite each other (use --num-profile-runs for repeats)"} {
		v, err := ParseLevels(s)
		if got := fmt.Sprint(v, " ", err); got != want {
			t.Errorf("ParseLevels(%q) = %s, want %s", s, got, want)
		}
	}
}
