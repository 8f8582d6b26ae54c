package timeline

import (
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// BenchmarkAdd is the timeline's cost per record: a 64-token stream (TTFT 200 ms, 20 ms
// between tokens, so it spans two or three windows) spread over its windows. Starts move over
// one second so the records land in a few windows, as a steady load does.
func BenchmarkAdd(b *testing.B) {
	gaps := make([]float64, 63)
	for i := range gaps {
		gaps[i] = 20
	}
	c := &clock{base.Add(10 * time.Second)}
	tl := New(Options{Now: c.now})
	r := stream("live", base, 200, gaps, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Start = base.Add(time.Duration(i%1000) * time.Millisecond)
		tl.Add(r)
		i++
	}
}

// BenchmarkAnchorStatsAdd is the anchor for BenchmarkAdd: the same record folded into the
// percentile aggregator every record already goes through (telemetry/stats).
func BenchmarkAnchorStatsAdd(b *testing.B) {
	gaps := make([]float64, 63)
	for i := range gaps {
		gaps[i] = 20
	}
	c := &clock{base.Add(10 * time.Second)}
	a := stats.New(stats.Options{Now: c.now})
	r := stream("live", base, 200, gaps, 64)
	b.ReportAllocs()
	for b.Loop() {
		a.Add(r)
	}
}

// gpuPoll is one poll of n GPUs at at.
func gpuPoll(n int, at time.Time, k uint64) []gpu.Sample {
	s := make([]gpu.Sample, n)
	for i := range s {
		s[i] = gpu.Sample{Time: at, Index: i, UUID: "GPU-" + string(rune('0'+i)), PowerMW: 400_000, EnergyMJ: k * 100_000,
			GPUUtil: 90, MemUsed: 1 << 34, MemTotal: 1 << 36, TempC: 60, SMClockMHz: 1980, Valid: gpu.FieldAll}
	}
	return s
}

// BenchmarkObserveGPU is what every GPU poll costs the hub: the attributor's copy and the
// timeline's window accumulation, for 8 GPUs.
func BenchmarkObserveGPU(b *testing.B) {
	c := &clock{base.Add(time.Hour)}
	tl := New(Options{Now: c.now})
	a := NewAttributor(0)
	polls := make([][]gpu.Sample, 64)
	for i := range polls {
		polls[i] = gpuPoll(8, base.Add(time.Duration(i)*250*time.Millisecond), uint64(i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := polls[i%len(polls)]
		a.Observe(p, 4)
		tl.AddGPU(p)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/8, "ns/sample")
}

// BenchmarkEnrich is the per-record cost of the GPU figures: a 2 s request against a full ring
// of 2400 polls of 8 GPUs at 250 ms.
func BenchmarkEnrich(b *testing.B) {
	a := NewAttributor(0)
	for i := range DefaultPolls {
		a.Observe(gpuPoll(8, base.Add(time.Duration(i)*250*time.Millisecond), uint64(i)), 4)
	}
	r := &record.Record{Start: base.Add(300 * time.Second), DurationMs: 2000}
	b.ReportAllocs()
	for b.Loop() {
		r.GPU = nil
		a.Enrich(r)
	}
	if r.GPU == nil || r.GPU.GPUs != 8 {
		b.Fatalf("no usage: %+v", r.GPU)
	}
}
