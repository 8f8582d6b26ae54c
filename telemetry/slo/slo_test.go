package slo

import (
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

func rec(model string, ttft, itl, lat float64) *record.Record {
	return &record.Record{Class: record.ClassLive, Model: model, TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: &lat}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestTrackerCounts(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := NewTracker(nil, clk.now)
	objs := []Objective{
		{Name: "team-a", Models: []string{"llama-*"}, Tenants: []string{"team-a"}, LatencyMs: 1},
		{Name: "chat", Models: []string{"llama-*"}, TTFTMs: 100, ITLMs: 10, Target: 0.9},
		{LatencyMs: 1000}, // every other model
	}
	if err := Validate(objs); err != nil {
		t.Fatal(err)
	}
	set := tr.NewSet(objs)
	feed := func(r *record.Record) { tr.Count(r, set) }
	feed(rec("llama-8b", 50, 5, 500))  // meets both
	feed(rec("llama-8b", 150, 5, 500)) // misses ttft
	feed(rec("llama-8b", 100, 11, 1))  // ttft equal to its threshold meets it; misses itl
	failed := rec("llama-8b", 10, 1, 1)
	failed.Error = record.ErrUpstream
	feed(failed)                     // a failure misses everything
	feed(rec("qwen", 999, 99, 2000)) // default SLO: misses latency
	shadow := rec("qwen", 1, 1, 1)
	shadow.Class = record.ClassShadow
	feed(shadow) // not live: not counted
	ta := rec("llama-8b", 1, 1, 5)
	ta.Tenant = "team-a"
	feed(ta)                                       // team-a's own SLO: misses its latency
	tr.Count(rec("qwen", 1, 1, 1), nil)            // no Set: not counted
	other := NewTracker(nil, clk.now).NewSet(objs) // another Tracker's Set: not counted
	r := rec("qwen", 1, 1, 1)
	tr.Count(r, other)

	cs, ts := tr.Counters()
	got := map[string][2]uint64{}
	for _, c := range cs {
		got[c.SLO+"/"+c.Model+"/"+c.Objective] = [2]uint64{c.Met, c.Missed}
	}
	want := map[string][2]uint64{
		"chat/llama-8b/ttft":      {2, 2},
		"chat/llama-8b/itl":       {2, 2},
		"chat/llama-8b/all":       {1, 3},
		"default/qwen/latency":    {0, 1},
		"default/qwen/all":        {0, 1},
		"team-a/llama-8b/latency": {0, 1},
		"team-a/llama-8b/all":     {0, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("counters %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(ts) != 3 || ts[0].Target != 0.9 || ts[1].Target != DefaultTarget {
		t.Errorf("targets %+v", ts)
	}
}

func TestTrackerWindows(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := NewTracker(nil, clk.now)
	set := tr.NewSet([]Objective{{TTFTMs: 100, Target: 0.5}})
	feed := func(ttft float64) { tr.Count(rec("m", ttft, 1, 1), set) }
	// An hour ago minus a bit: 4 misses, out of every window but the total.
	for range 4 {
		feed(500)
	}
	clk.t = clk.t.Add(time.Hour + 10*time.Second)
	// 10 minutes ago: 2 good, in the 1h window only.
	feed(10)
	feed(10)
	clk.t = clk.t.Add(10 * time.Minute)
	// Now: 1 good, 1 miss, in every window.
	feed(10)
	feed(500)
	reps := tr.Reports()
	if len(reps) != 1 {
		t.Fatalf("%d reports", len(reps))
	}
	rep := reps[0]
	check := func(w Window, n, good uint64, att, burn float64) {
		t.Helper()
		if w.Requests != n || w.Good != good || w.Attainment[ObjAll] != att || w.Attainment[ObjTTFT] != att || w.BurnRate == nil || *w.BurnRate != burn {
			t.Errorf("%s: %+v (burn %v), want %d requests, %d good, attainment %v, burn %v", w.Window, w, w.BurnRate, n, good, att, burn)
		}
	}
	check(rep.Total, 8, 3, 3.0/8, (1-3.0/8)/0.5)
	check(rep.Windows[0], 2, 1, 0.5, 1)    // 1m
	check(rep.Windows[1], 2, 1, 0.5, 1)    // 5m
	check(rep.Windows[2], 4, 3, 0.75, 0.5) // 1h
	if rep.Windows[2].Seconds != 3600 || rep.Windows[2].Goodput != 3.0/3600 {
		t.Errorf("1h window: %v s, goodput %v", rep.Windows[2].Seconds, rep.Windows[2].Goodput)
	}
}

func TestTrackerBoundsSeries(t *testing.T) {
	tr := NewTracker(nil, nil)
	set := tr.NewSet([]Objective{{LatencyMs: 1}})
	for i := range MaxSeries + 5 {
		r := rec(strings.Repeat("m", 1)+string(rune('A'+i%26))+time.Duration(i).String(), 1, 1, 1)
		tr.Count(r, set)
	}
	if cs, _ := tr.Counters(); len(cs) != 2*MaxSeries || tr.Dropped() != 5 {
		t.Errorf("%d counters, %d dropped; want %d and 5", len(cs), tr.Dropped(), 2*MaxSeries)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		objs []Objective
		want string
	}{
		{[]Objective{{}}, "sets no threshold"},
		{[]Objective{{TTFTMs: -1}}, "ttft must be a finite number"},
		{[]Objective{{TTFTMs: 1, Target: 1}}, "target must be a fraction in (0, 1)"},
		{[]Objective{{TTFTMs: 1, Models: []string{"[x"}}}, `model selector "[x"`},
		{[]Objective{{TTFTMs: 1, Tenants: []string{""}}}, `tenant selector ""`},
		{[]Objective{{TTFTMs: 1}, {LatencyMs: 2}}, `slo "default": the name is given twice`},
		{[]Objective{{TTFTMs: 1, Name: strings.Repeat("n", MaxName+1)}}, "at most 128 bytes"},
		{[]Objective{{TTFTMs: 1, Models: []string{"\xff"}}}, "must be valid UTF-8"},
	} {
		err := Validate(tt.objs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.objs, err, tt.want)
		}
	}
}

// TestTrackerConcurrent reads the counters and reports while records are counted (run with
// -race); every record is counted once.
func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(nil, nil)
	set := tr.NewSet([]Objective{{TTFTMs: 100}})
	const writers, each = 4, 500
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			tr.Reports()
			tr.Counters()
		}
	}()
	finished := make(chan struct{}, writers)
	for w := range writers {
		go func() {
			for i := range each {
				r := rec("m", float64((w*each+i)%200), 1, 1)
				tr.Count(r, set)
			}
			finished <- struct{}{}
		}()
	}
	for range writers {
		<-finished
	}
	<-done
	cs, _ := tr.Counters()
	for _, c := range cs {
		if c.Met+c.Missed != writers*each {
			t.Errorf("%s: %d met + %d missed, want %d", c.Objective, c.Met, c.Missed, writers*each)
		}
		if c.Met != writers*each/200*101 { // TTFT 0…100 of every 200 meet 100
			t.Errorf("%s: %d met, want %d", c.Objective, c.Met, writers*each/200*101)
		}
	}
}

// TestTrackerListsUnmatchedSLOs: an SLO no request matched yet is listed with no requests
// (issue 34: "an SLO that matched no request is not listed in /llmtap/slo"), beside the ones
// that counted, with its target and thresholds.
func TestTrackerListsUnmatchedSLOs(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := NewTracker(nil, clk.now)
	objs := []Objective{
		{Name: "batch", Models: []string{"batch-*"}, LatencyMs: 60000, Target: 0.95},
		{Name: "chat", TTFTMs: 100},
	}
	if err := Validate(objs); err != nil {
		t.Fatal(err)
	}
	set := tr.NewSet(objs)
	r := rec("llama", 50, 5, 500)
	tr.Count(r, set)
	reps := tr.Reports()
	if len(reps) != 2 || reps[0].SLO != "batch" || reps[1].SLO != "chat" {
		t.Fatalf("reports %+v, want batch (unmatched) and chat", reps)
	}
	b := reps[0]
	if b.Model != "" || b.Total.Requests != 0 || b.Target != 0.95 || b.Thresholds.LatencyMs != 60000 || len(b.Windows) != len(Windows) || b.Total.BurnRate != nil {
		t.Errorf("unmatched SLO reported %+v", b)
	}
	if reps[1].Total.Requests != 1 || reps[1].Model != "llama" {
		t.Errorf("matched SLO reported %+v", reps[1])
	}
	if cs, _ := tr.Counters(); len(cs) != 2 { // chat/llama: ttft, all; nothing for batch
		t.Errorf("counters %+v: an unmatched SLO has no series", cs)
	}
}
