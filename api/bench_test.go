package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// BenchmarkStatsTimelineWindow is the cost of one window of the stats source — a full
// summary of the aggregator folded into series — which every stream pays once per window
// where no timeline runs: 10 models × 3 classes with 1,000 requests each.
func BenchmarkStatsTimelineWindow(b *testing.B) {
	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	for m := range 10 {
		for _, c := range []string{record.ClassLive, record.ClassShadow, record.ClassMirror} {
			for i := range 1000 {
				tp.Stats().Add(rec(fmt.Sprintf("model-%d", m), c, 20+float64(i%50), 2+float64(i%7)/10, 64, ""))
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		// A new source each time: one computes a window once per period.
		st := &api.StatsTimeline{Tap: func() *tap.Tap { return tp }}
		if ws := st.Windows(0); len(ws) != 1 || len(ws[0].Series) != 30 {
			b.Fatalf("windows %v", ws)
		}
	}
}
