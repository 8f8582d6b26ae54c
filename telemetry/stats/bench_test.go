package stats

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// benchRecord is a realistic streamed answer: 129 tokens one chunk each, so 128 gaps.
func benchRecord(model string) *record.Record {
	r := streamRecord(model, record.ClassLive, time.Now(), 180, 21, 129)
	for i := range r.InterChunkMs {
		r.InterChunkMs[i] = 15 + float64(i%13) // jitter spreads the gaps over several slots
	}
	return r
}

// valuesPerRecord counts the histogram values one Add of r records.
func valuesPerRecord(r *record.Record) int {
	vs := extract(r)
	n := len(r.InterChunkMs)
	for _, h := range vs.has {
		if h {
			n++
		}
	}
	return n
}

func BenchmarkAddParallel(b *testing.B) {
	for _, keys := range []int{1, 4} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			a := New(Options{})
			recs := make([]*record.Record, keys)
			for i := range recs {
				recs[i] = benchRecord(fmt.Sprintf("model-%d", i))
			}
			per := valuesPerRecord(recs[0])
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := recs[int(next.Add(1))%keys]
				for pb.Next() {
					a.Add(r)
				}
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/value")
			b.ReportMetric(float64(per), "values/record")
		})
	}
}

func BenchmarkRecordValue(b *testing.B) {
	h := NewHist(HistOptions{})
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := 1.0
		for pb.Next() {
			h.Record(now, v)
			v = v*1.37 + 0.11
			if v > 100000 {
				v = 1
			}
		}
	})
}

func BenchmarkSummary(b *testing.B) {
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	// Four keys with every window slot filled, the worst case for merging.
	for s := range 6 {
		clk.Set(t0.Add(time.Duration(s) * 10 * time.Second))
		for k := range 4 {
			for range 20 {
				a.Add(benchRecord(fmt.Sprintf("model-%d", k)))
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Summary()
	}
}
