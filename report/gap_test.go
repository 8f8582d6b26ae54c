package report

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestChartsBreakAcrossIdle: a run with 27 s without traffic between two bursts draws zero
// rates (and no latency) in the idle windows, not a straight line from one burst to the next
// (issue 34: "27 s idle shown as 2–4 req/s").
func TestChartsBreakAcrossIdle(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []*record.Record
	for i := range 6 {
		off := time.Duration(i) * 500 * time.Millisecond
		if i >= 3 {
			off += 27 * time.Second
		}
		recs = append(recs, rec(base, fmt.Sprintf("live-%d", i), off, record.ClassLive, "m1", 20, 5, 10))
	}
	rep := reportOf(t, recs)
	rate := series(t, chart(t, rep, "request_rate"), "live").Points
	ttft := series(t, chart(t, rep, "ttft_time"), "live p50").Points
	idle, sum := 0, 0.0
	for i, p := range rate {
		sum += p.Y
		if p.X > 3 && p.X < 27 {
			idle++
			if p.Y != 0 {
				t.Errorf("request rate %v at %v s, inside the idle stretch", p.Y, p.X)
			}
			if !math.IsNaN(ttft[i].Y) {
				t.Errorf("TTFT p50 %v at %v s, inside the idle stretch", ttft[i].Y, ttft[i].X)
			}
		}
	}
	if idle < 20 {
		t.Errorf("%d points inside the 24 s idle stretch, want one a 1 s window: %v", idle, rate)
	}
	if sum != 6 {
		t.Errorf("request rate sums to %v over 1 s windows, want 6 requests", sum)
	}
}
