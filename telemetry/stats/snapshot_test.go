package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// mixedRecords are n records of two models with spread-out latencies, some failed.
func mixedRecords(n int, seed uint64) []*record.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	out := make([]*record.Record, n)
	for i := range out {
		model := []string{"a", "b"}[i%2]
		r := streamRecord(model, "bench", t0.Add(time.Duration(i)*time.Millisecond), 1+rng.ExpFloat64()*40, 0.5+rng.Float64()*9, 2+rng.IntN(60))
		if i%7 == 3 {
			r = &record.Record{Model: model, Class: "bench", Status: 500, Error: record.ErrHTTP, Start: r.Start, DurationMs: 3}
		}
		out[i] = r
	}
	return out
}

// TestSnapshotMergeIsExact splits records over three aggregators, merges their snapshots
// (through JSON, as files carry them) into a fourth, and compares its cumulative summary with
// that of one aggregator fed every record: counts, bounds, min, max and every percentile
// equal exactly; sums and means to float rounding.
func TestSnapshotMergeIsExact(t *testing.T) {
	recs := mixedRecords(3000, 7)
	pooled := New(Options{SLOs: []SLO{{Metric: TagTTFT, Threshold: 20}}})
	parts := make([]*Aggregator, 3)
	for i := range parts {
		parts[i] = New(Options{SLOs: []SLO{{Metric: TagTTFT, Threshold: 20}}})
	}
	for i, r := range recs {
		pooled.Add(r)
		parts[(i*i+i/5)%3].Add(r) // uneven shares
	}
	merged := New(Options{SLOs: []SLO{{Metric: TagTTFT, Threshold: 20}}})
	for _, p := range parts {
		s, err := p.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Snapshot
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := merged.Merge(back); err != nil {
			t.Fatal(err)
		}
	}
	want, got := cumulative(pooled.Summary()), cumulative(merged.Summary())
	if len(want) != 4 || len(got) != len(want) {
		t.Fatalf("%d groups merged, %d pooled (want 4: two models, 2xx and 5xx)", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("merged summary lacks %v", k)
		}
		if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
			t.Errorf("%v: bounds %v–%v, want %v–%v", k, g.Start, g.End, w.Start, w.End)
		}
		for tag, ws := range w.Scalars {
			if gs := g.Scalars[tag]; math.Abs(gs.Value-ws.Value) > 1e-9*math.Abs(ws.Value) {
				t.Errorf("%v %s: %v, want %v", k, tag, gs.Value, ws.Value)
			}
		}
		if len(g.Metrics) != len(w.Metrics) || len(g.Errors) != len(w.Errors) {
			t.Errorf("%v: %d metrics and errors %v, want %d and %v", k, len(g.Metrics), g.Errors, len(w.Metrics), w.Errors)
		}
		for tag, ws := range w.Metrics {
			gs := g.Metrics[tag]
			wp := [...]float64{ws.Min, ws.Max, ws.P1, ws.P5, ws.P10, ws.P25, ws.P50, ws.P75, ws.P90, ws.P95, ws.P99}
			gp := [...]float64{gs.Min, gs.Max, gs.P1, gs.P5, gs.P10, gs.P25, gs.P50, gs.P75, gs.P90, gs.P95, gs.P99}
			if gs.Count != ws.Count || gp != wp {
				t.Errorf("%v %s: count %d %v, want %d %v", k, tag, gs.Count, gp, ws.Count, wp)
			}
			if math.Abs(gs.Avg-ws.Avg) > 1e-9*math.Abs(ws.Avg) || math.Abs(gs.Std-ws.Std) > 1e-6*(ws.Std+1e-9) {
				t.Errorf("%v %s: avg %v std %v, want %v %v", k, tag, gs.Avg, gs.Std, ws.Avg, ws.Std)
			}
		}
	}
}

func cumulative(s Summary) map[Key]GroupSummary {
	m := map[Key]GroupSummary{}
	for _, g := range s.Groups {
		if g.Window == WindowCumulative {
			m[g.Key] = g
		}
	}
	return m
}

// TestSnapshotMergeRefusesBadInput: a histogram of another range, a count the histogram does
// not hold, an unknown metric and garbage are errors, not wrong figures.
func TestSnapshotMergeRefusesBadInput(t *testing.T) {
	a := New(Options{})
	a.Add(streamRecord("m", "bench", time.Now(), 10, 2, 5))
	s, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	good := s.Keys[0].Dists[TagTTFT]
	other := NewHist(HistOptions{Max: 1000})
	other.Record(time.Now(), 0.5)
	od, _ := other.Dist()
	for name, d := range map[string]DistSnapshot{
		"other range":    {Count: 1, Sum: 0.5, Mean: 0.5, Min: 0.5, Max: 0.5, HDR: od.HDR},
		"count mismatch": func() DistSnapshot { d := good; d.Count = 2; return d }(),
		"garbage":        {Count: 1, HDR: "bm90IGEgaGlzdG9ncmFt"},
		"short":          {Count: 1, HDR: "AA=="},
		"no histogram":   {Count: 1},
	} {
		snap := Snapshot{Keys: []KeySnapshot{{Key: Key{Model: "m", Class: "bench", StatusClass: "2xx"}, Dists: map[string]DistSnapshot{TagTTFT: d}}}}
		if err := New(Options{}).Merge(snap); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
	snap := Snapshot{Keys: []KeySnapshot{{Key: Key{Model: "m"}, Dists: map[string]DistSnapshot{"nope": good}}}}
	if err := New(Options{}).Merge(snap); err == nil {
		t.Error("unknown metric merged")
	}
}

// FuzzSnapshotMerge feeds arbitrary JSON to Merge: it may refuse, never panic, and what it
// accepts summarizes.
func FuzzSnapshotMerge(f *testing.F) {
	a := New(Options{})
	a.Add(streamRecord("m", "bench", time.Now(), 10, 2, 5))
	s, _ := a.Snapshot()
	b, _ := json.Marshal(s)
	f.Add(b)
	f.Add([]byte(`{"keys":[{"key":{"model":"m"},"dists":{"time_to_first_token":{"count":1,"hdr":"HISTFAAAAB"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Snapshot
		if json.Unmarshal(data, &s) != nil {
			return
		}
		a := New(Options{})
		if a.Merge(s) == nil {
			a.Summary()
		}
	})
}
