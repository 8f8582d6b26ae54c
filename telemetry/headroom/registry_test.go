package headroom

import (
	"math"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestLoadIntegral: a request's concurrency is the mean of the requests in flight over its
// lifetime, itself included, whatever the order of arrivals within it.
func TestLoadIntegral(t *testing.T) {
	base := time.Unix(100, 0)
	l := load{base: base}
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	a := l.add(at(0), 1) // A: 0 → 4 s
	b := l.add(at(1), 1) // B: 1 → 2 s
	l.add(at(2), -1)     // B ends
	endA := l.add(at(4), -1)
	// A was alone for 3 s and with B for 1 s: 5 request·seconds over 4 s.
	if got := (endA - a) / 4; math.Abs(got-1.25) > 1e-9 {
		t.Errorf("A's mean concurrency %v, want 1.25", got)
	}
	_ = b
	// A request that arrives first in a burst still sees the burst: C arrives at 10 s, D, E
	// and F 1 ms later, all end at 11 s.
	c := l.add(at(10), 1)
	for range 3 {
		l.add(at(10.001), 1)
	}
	for range 3 {
		l.add(at(11), -1)
	}
	endC := l.add(at(11), -1)
	if got := endC - c; math.Abs(got-(1*0.001+4*0.999)) > 1e-9 {
		t.Errorf("C's mean concurrency %v, want about 4", got)
	}
}

// TestTargetObservesLiveStreamsOnly: Done observes a live request that streamed, and counts
// every request out of the load whatever its class.
func TestTargetObservesLiveStreamsOnly(t *testing.T) {
	var g Registry
	tg, err := g.Acquire(&Config{TTFTMs: 100, WindowSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Release()
	ttft, lat := 50.0, 80.0
	for _, class := range []string{record.ClassLive, record.ClassShadow, record.ClassLive} {
		t0 := time.Now().Add(-100 * time.Millisecond)
		in := tg.Enter(t0)
		rec := &record.Record{Class: class, Start: t0, TTFTMs: &ttft, RequestLatencyMs: &lat}
		up := "10.0.0.9:80"
		if class == record.ClassLive && in > 0 {
			up = "" // the second live request reached no upstream
		}
		tg.Done(up, in, rec)
	}
	if tg.load.n != 0 {
		t.Errorf("%d requests left in flight", tg.load.n)
	}
	tg.e.Tick()
	est := tg.e.Estimates()
	if len(est) != 1 || est[0].Requests != 1 || est[0].Upstream != "10.0.0.9:80" {
		t.Errorf("estimates %+v, want one request of 10.0.0.9:80", est)
	}
	// Acquire refuses a bad config; nil means none.
	if _, err := g.Acquire(&Config{}); err == nil {
		t.Error("a config without ttft_ms was accepted")
	}
	if tg, err := g.Acquire(nil); tg != nil || err != nil {
		t.Errorf("nil config: %v, %v", tg, err)
	}
}

// BenchmarkTargetEnterDone is the whole cost on the request path: Enter at arrival, Done at
// the end of a live request that streamed.
func BenchmarkTargetEnterDone(b *testing.B) {
	var g Registry
	tg, _ := g.Acquire(&Config{TTFTMs: 200})
	defer tg.Release()
	ttft, lat := 30.0, 300.0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := &record.Record{Class: record.ClassLive, TTFTMs: &ttft, RequestLatencyMs: &lat}
		for pb.Next() {
			rec.Start = time.Now()
			in := tg.Enter(rec.Start)
			tg.Done("10.0.0.1:8000", in, rec)
		}
	})
}
