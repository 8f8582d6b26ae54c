package trace

import (
	"math"
	"slices"
	"testing"
	"time"
)

// summarize runs reqs through a Collector, as SummarizeFile does a file's.
func summarize(reqs []Request) Summary {
	c := NewCollector()
	for _, r := range reqs {
		c.Add(r)
	}
	return c.Summary()
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    []int
		p    float64
		want float64
		why  string
	}{
		{[]int{1, 2, 3, 4}, 50, 2.5, "even count: halfway between the middle two"},
		{[]int{1, 2, 3, 4}, 90, 3.7, "rank 0.9·3 = 2.7 interpolates 3 → 4"},
		{[]int{10}, 99, 10, "one value is every percentile"},
		{[]int{1, 2}, 100, 2, "p100 is the maximum"},
		{[]int{1, 2}, 0, 1, "p0 is the minimum"},
		{nil, 50, 0, "no values"},
	}
	for _, tc := range cases {
		if got := Percentile(tc.v, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Percentile(%v, %g) = %g, want %g: %s", tc.v, tc.p, got, tc.want, tc.why)
		}
	}
}

func TestStatsHandComputed(t *testing.T) {
	t.Parallel()
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	// Gaps 1, 1, 4 s: mean 2, population std √2, CV 0.7071. The minutes from t0=0 hold
	// 4 arrivals ([0,60)) and 1 ([60,120)).
	reqs := []Request{
		{Timestamp: sec(0), InputLength: 100, OutputLength: 10, HashIDs: []int64{1, 2}},
		{Timestamp: sec(1), InputLength: 200, OutputLength: 20, HashIDs: []int64{1, 3}, Failed: true},
		{Timestamp: sec(2), InputLength: 300, OutputLength: 30, HashIDs: []int64{4, 4}},
		{Timestamp: sec(6), InputLength: 400, OutputLength: 40},
		{Timestamp: sec(61), InputLength: 500, OutputLength: 50},
	}
	s := summarize(reqs[:4])
	if s.Requests != 4 || s.Failures != 1 || s.SpanSeconds != 6 || math.Abs(s.Rate-0.5) > 1e-12 {
		t.Errorf("counts/span/rate wrong: %+v", s)
	}
	if math.Abs(s.IATCV-math.Sqrt2/2) > 1e-12 {
		t.Errorf("IAT CV = %g, want √2/2 (population std)", s.IATCV)
	}
	// Blocks: 6; reused: the second request's id 1. Id 4 twice within one request is not reuse.
	if s.HashBlocks != 6 || s.ReusedBlocks != 1 || math.Abs(s.PrefixReuse-1.0/6) > 1e-12 {
		t.Errorf("reuse %d/%d = %g, want 1/6", s.ReusedBlocks, s.HashBlocks, s.PrefixReuse)
	}
	if s.Input.Mean != 250 || s.Input.P50 != 250 || s.Input.Min != 100 || s.Input.Max != 400 || s.Output.Sum != 100 {
		t.Errorf("token distribution wrong: %+v / %+v", s.Input, s.Output)
	}
	s = summarize(reqs)
	if s.PeakMinuteRate != 4.0/60 || s.PeakMinuteStart != 0 {
		t.Errorf("peak minute %g at %g, want 4/60 at 0", s.PeakMinuteRate, s.PeakMinuteStart)
	}
	// Shorter than a minute: no whole minute, no peak-minute figure below the mean (4 arrivals
	// in 6 s were reported as a peak of 4/60 req/s, under the mean of 0.5 req/s).
	if s := summarize(reqs[:4]); s.PeakMinuteRate != 0 || s.PeakMinuteStart != 0 {
		t.Errorf("a 6 s trace: peak minute %g at %g, want none (0)", s.PeakMinuteRate, s.PeakMinuteStart)
	}
	// The trailing part of a minute does not count: 30 arrivals in [60 s, 61 s) after 4 in
	// the first minute would be a "peak" of 30/60 req/s over one second.
	burst := slices.Clone(reqs[:4])
	for i := range 30 {
		burst = append(burst, Request{Timestamp: sec(60) + time.Duration(i)*time.Millisecond, InputLength: 1})
	}
	burst = append(burst, Request{Timestamp: sec(61), InputLength: 1})
	if s := summarize(burst); s.PeakMinuteRate != 4.0/60 || s.PeakMinuteStart != 0 {
		t.Errorf("a burst in the trailing second: peak minute %g at %g, want 4/60 at 0 (the only whole minute)", s.PeakMinuteRate, s.PeakMinuteStart)
	}
	// Arrival order does not matter to timing statistics: gaps come from sorted times.
	shuffled := []Request{reqs[3], reqs[0], reqs[2], reqs[1]}
	if got := summarize(shuffled).IATCV; math.Abs(got-math.Sqrt2/2) > 1e-12 {
		t.Errorf("unsorted input changed the CV to %g", got)
	}
}

func TestStatsDegenerate(t *testing.T) {
	t.Parallel()
	if s := summarize(nil); s != (Summary{}) {
		t.Errorf("empty trace: %+v, want zero", s)
	}
	s := summarize([]Request{{InputLength: 3}})
	if s.Requests != 1 || s.Rate != 0 || s.IATCV != 0 || s.Input.P99 != 3 || s.PeakMinuteRate != 0 {
		t.Errorf("one request: %+v (no NaN, rate and CV 0)", s)
	}
	s = summarize([]Request{{}, {}})
	if s.Rate != 0 || s.IATCV != 0 || s.DistinctTimestamps != 1 {
		t.Errorf("simultaneous arrivals: %+v (zero span must not divide)", s)
	}
}
