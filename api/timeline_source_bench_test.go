package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// BenchmarkTimelineSourceWindow is the cost of one StreamTimeline window from a timeline of
// fixed windows (the Caddy app's) — the closed window's snapshot converted to protobuf — for
// the same traffic as BenchmarkStatsTimelineWindow: 10 models × 3 classes, 1,000 requests
// each, here all completed within the window.
func BenchmarkTimelineSourceWindow(b *testing.B) {
	now := time.Now().Truncate(time.Second)
	tl := timeline.New(timeline.Options{Now: func() time.Time { return now.Add(500 * time.Millisecond) }})
	for m := range 10 {
		for _, c := range []string{record.ClassLive, record.ClassShadow, record.ClassMirror} {
			for i := range 1000 {
				ttft, itl := 20+float64(i%50), 2+float64(i%7)/10
				tl.Add(&record.Record{Model: fmt.Sprintf("model-%d", m), Class: c, Status: 200,
					Start: now.Add(100 * time.Millisecond), TTFTMs: &ttft, ITLMs: &itl, DurationMs: ttft + 63*itl,
					OutputTokens: 64, ContentEvents: 64, InputTokens: 100})
			}
		}
	}
	tl.Close(now.Add(time.Second))
	src := api.TimelineSource{TL: tl}
	after := now.Add(-time.Second).UnixNano() / int64(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if ws := src.Windows(after); len(ws) != 1 || len(ws[0].Series) != 30 {
			b.Fatalf("%d windows, %d series", len(ws), len(ws[0].GetSeries()))
		}
	}
}
