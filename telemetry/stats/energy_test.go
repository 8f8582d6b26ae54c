package stats

import (
	"math"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestTokensPerJoule checks the energy scalars: summed over the successful records that carry
// a GPU energy share, absent when none does, and never fed by failed requests.
func TestTokensPerJoule(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := New(Options{Now: clk.Now})
	start := clk.Now()
	for _, e := range []float64{10, 30} {
		r := streamRecord("m", record.ClassLive, start, 50, 5, 100)
		r.GPU = &record.GPUUsage{EnergyJ: e}
		a.Add(r)
	}
	failed := streamRecord("m", record.ClassLive, start, 50, 5, 100)
	failed.Error, failed.GPU = record.ErrTruncated, &record.GPUUsage{EnergyJ: 1000}
	a.Add(failed)
	a.Add(streamRecord("n", record.ClassLive, start, 50, 5, 100)) // no GPU data
	clk.Set(start.Add(time.Second))
	s := a.Summary()

	g, ok := s.Find(Key{Model: "m", Class: record.ClassLive, StatusClass: "2xx"}, WindowCumulative)
	if !ok {
		t.Fatal("no cumulative group for model m")
	}
	for tag, want := range map[string]float64{TagGPUEnergy: 40, TagTokensPerJoule: 5, TagJoulesPerOutputToken: 0.2} {
		if got := g.Scalars[tag].Value; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tag, got, want)
		}
	}
	n, _ := s.Find(Key{Model: "n", Class: record.ClassLive, StatusClass: "2xx"}, WindowCumulative)
	if _, ok := n.Scalars[TagTokensPerJoule]; ok {
		t.Error("a group without GPU data shows tokens per joule")
	}
}
