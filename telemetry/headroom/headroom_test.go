package headroom

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// clock is a settable clock for the estimator.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// server with slots: TTFT base below the knee, one service time per slot for each request
// beyond it.
func hockey(c, knee, base, slope float64) float64 { return base + slope*max(0, c-knee) }

func TestFitStickRecoversAKnownKnee(t *testing.T) {
	for _, tc := range []struct{ knee, base, slope float64 }{{4, 50, 25}, {7.5, 20, 3}, {2, 100, 80}} {
		var pts []point
		for c := 1.0; c <= 12; c++ {
			pts = append(pts, point{c, hockey(c, tc.knee, tc.base, tc.slope), 10})
		}
		s := fitStick(pts)
		if !s.ok || math.Abs(s.Knee-tc.knee) > 0.26 || math.Abs(s.Base-tc.base) > 1e-6*tc.base || math.Abs(s.Slope-tc.slope) > 1e-6*tc.slope {
			t.Errorf("knee %v base %v slope %v: fitted %+v", tc.knee, tc.base, tc.slope, s)
		}
	}
	// A flat series has no knee.
	flatPts := []point{{1, 50, 5}, {2, 50, 5}, {3, 50, 5}, {4, 50, 5}}
	if s := fitStick(flatPts); !s.ok || s.Slope != 0 || s.Base != 50 {
		t.Errorf("flat: %+v", s)
	}
	// Too few points: no fit.
	if s := fitStick(flatPts[:2]); s.ok {
		t.Errorf("two points fitted: %+v", s)
	}
}

// feed observes n requests per concurrency level 1..top, one level per window, from a server
// whose TTFT is a hockey stick with noise (lognormal-ish, cv about 10 %) and whose latency is
// TTFT plus a fixed decode time.
func feed(e *Estimator, clk *clock, rng *rand.Rand, top, n int, knee, base, slope, decode float64) {
	for c := 1; c <= top; c++ {
		for range n {
			ttft := hockey(float64(c), knee, base, slope) * (1 + 0.1*rng.NormFloat64())
			ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
			e.Observe("10.0.0.1:8000", 100*time.Millisecond, float64(c), ms(ttft), ms(ttft+decode))
			clk.t = clk.t.Add(time.Second / time.Duration(n))
		}
		e.Tick()
	}
}

func TestEstimateFromSyntheticTraffic(t *testing.T) {
	// Knee at 4, base 50 ms, 25 ms per request beyond: the objective of 100 ms is reached at
	// concurrency 6. The feed holds the rate at 40 requests/s in every window while the
	// concurrency climbs (as a closed loop past its capacity does), so the rate at which the
	// objective is reached is those 40/s.
	clk := &clock{t: time.Unix(1000, 0)}
	e := New(Options{Window: time.Second, Windows: 20, Now: clk.now})
	feed(e, clk, rand.New(rand.NewPCG(7, 7)), 10, 40, 4, 50, 25, 70)
	got := e.Estimates()
	if len(got) != 1 {
		t.Fatalf("%d estimates", len(got))
	}
	est := got[0]
	t.Logf("%+v", est)
	if est.State != "ok" || est.Extrapolated {
		t.Fatalf("state %q extrapolated %v", est.State, est.Extrapolated)
	}
	if math.Abs(est.KneeConcurrency-4) > 0.6 {
		t.Errorf("knee %v, want 4", est.KneeConcurrency)
	}
	c, x := est.SLOConcurrency, est.SLORequestsPerSec
	if c.Estimate == nil || math.Abs(*c.Estimate-6) > 0.3 {
		t.Errorf("SLO concurrency %v, want 6", deref(c.Estimate))
	}
	// The rate model reads 40/s; the windows at or above the objective (concurrency 6 to 10)
	// delivered 40/s each, without spread, so the cap at what they delivered is 40/s too.
	if x.Estimate == nil || math.Abs(*x.Estimate-40) > 0.5 {
		t.Errorf("SLO rate %v, want 40", deref(x.Estimate))
	}
	if x.Low == nil || x.High == nil || *x.Low > *x.Estimate || *x.High < 40 {
		t.Errorf("SLO rate interval [%v, %v]", deref(x.Low), deref(x.High))
	}
	// The interval holds the truth and is narrow with 400 requests.
	if c.Low == nil || c.High == nil || *c.Low > 6 || *c.High < 6 || *c.High-*c.Low > 3 {
		t.Errorf("SLO concurrency interval [%v, %v]", deref(c.Low), deref(c.High))
	}
	// The current load is the last window's: concurrency 10, 40 requests a second.
	if est.CurrentConcurrency != 10 || math.Abs(est.CurrentRequestsPerSec-40) > 1 {
		t.Errorf("current %v at %v/s", est.CurrentConcurrency, est.CurrentRequestsPerSec)
	}
	// What is left is read from the rate, so the two remaining figures agree in sign (issue
	// 34: right after a load, concurrency left read negative beside rate left positive).
	rc, rx := est.RemainingConcurrency, est.RemainingRequestsPerSec
	if r := rc.Estimate; r == nil || rx.Estimate == nil || math.Abs(*r-*c.Estimate*(1 - est.CurrentRequestsPerSec / *x.Estimate)) > 1e-9 ||
		(*r > 0) != (*rx.Estimate > 0) {
		t.Errorf("remaining concurrency %v beside remaining rate %v", deref(r), deref(rx.Estimate))
	}
	if len(est.Levels) != 10 || est.Requests != 400 {
		t.Errorf("%d levels, %d requests", len(est.Levels), est.Requests)
	}
}

func deref(p *float64) any {
	if p == nil {
		return "unbounded"
	}
	return *p
}

func TestNoKneeAndAgeing(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	e := New(Options{Window: time.Second, Windows: 5, Now: clk.now})
	// Flat TTFT well under the objective: no knee, the SLO figures unbounded.
	feed(e, clk, rand.New(rand.NewPCG(1, 1)), 4, 20, 100, 40, 0, 70)
	est := e.Estimates()[0]
	if est.State != "objective not reached yet" || est.SLOConcurrency.Estimate != nil {
		t.Errorf("flat traffic: state %q, SLO concurrency %v", est.State, deref(est.SLOConcurrency.Estimate))
	}
	// The knee is out of sight: no estimate, no upper bound, and a lower bound no higher
	// than the load seen (20 requests/s at concurrency 1 to 4).
	x, c := est.SLORequestsPerSec, est.SLOConcurrency
	if x.Estimate != nil || x.High != nil || x.Low == nil || *x.Low > 20.5 || *x.Low < 15 || c.High != nil || c.Low == nil || *c.Low > 4 {
		t.Errorf("flat traffic: rate [%v, %v], concurrency [%v, %v]", deref(x.Low), deref(x.High), deref(c.Low), deref(c.High))
	}
	// Long idle: every window ages out.
	clk.t = clk.t.Add(time.Minute)
	e.Tick()
	if est := e.Estimates()[0]; est.Requests != 0 || est.State != "collecting" {
		t.Errorf("after a minute idle: %d requests, %q", est.Requests, est.State)
	}
}

func TestServerSignalsAndBounds(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	e := New(Options{Window: time.Second, Windows: 20, MaxSeries: 1, Now: clk.now})
	e.ObserveServer("http://10.0.0.1:8000/metrics", 0.25, 2, 4)
	feed(e, clk, rand.New(rand.NewPCG(3, 3)), 6, 10, 4, 50, 25, 70)
	est := e.Estimates()[0]
	if est.KVCacheUsage == nil || *est.KVCacheUsage != 0.25 || est.Waiting == nil || *est.Waiting != 2 {
		t.Errorf("scrape not matched to the upstream: %+v", est)
	}
	// KV usage 0.25 at every level: the fit through the origin reaches 1 at 4/0.25 weighted.
	if est.KVLimitConcurrency == nil || est.QueueOnsetConcurrency == nil || *est.QueueOnsetConcurrency != 1 {
		t.Errorf("kv limit %v, queue onset %v", deref(est.KVLimitConcurrency), deref(est.QueueOnsetConcurrency))
	}
	// The queue shows from concurrency 5 on; a stale scrape showing a queue at concurrency 1
	// does not make it the onset.
	clk.t = clk.t.Add(time.Minute)
	e.Tick() // the windows before are forgotten; observations go to the window Tick opened
	e.ObserveServer("http://10.0.0.1:8000/metrics", 0.25, 3, 4)
	for range 5 {
		e.Observe("10.0.0.1:8000", 100*time.Millisecond, 1, 50*time.Millisecond, 100*time.Millisecond)
	}
	for c := int64(2); c <= 8; c++ {
		w := 0.0
		if c >= 5 {
			w = float64(c - 4)
		}
		e.ObserveServer("http://10.0.0.1:8000/metrics", 0.25, w, 4)
		for range 5 {
			e.Observe("10.0.0.1:8000", 100*time.Millisecond, float64(c), 50*time.Millisecond, 100*time.Millisecond)
		}
	}
	e.Tick()
	if q := e.Estimates()[0].QueueOnsetConcurrency; q == nil || *q != 5 {
		t.Errorf("queue onset %v, want 5", deref(q))
	}
	// A second upstream is over MaxSeries: dropped and counted.
	e.Observe("10.0.0.2:8000", time.Second, 1, time.Millisecond, time.Millisecond)
	if e.Dropped() != 1 {
		t.Errorf("dropped %d", e.Dropped())
	}
	// Concurrency beyond Levels lands in the last level.
	e.Observe("10.0.0.1:8000", 100*time.Millisecond, 1000, time.Millisecond, time.Millisecond)
	e.Tick()
	last := e.Estimates()[0].Levels
	if c := last[len(last)-1].Concurrency; c != 1000 {
		t.Errorf("last level at concurrency %v", c)
	}
}

// BenchmarkObserve is the cost on the request path: one observation of a tracked upstream.
func BenchmarkObserve(b *testing.B) {
	e := New(Options{})
	e.ObserveServer("http://10.0.0.1:8000/metrics", 0.5, 1, 4)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var c int64
		for pb.Next() {
			c++
			e.Observe("10.0.0.1:8000", 200*time.Millisecond, float64(1+c%16), 30*time.Millisecond, 300*time.Millisecond)
		}
	})
}

// BenchmarkTick is one fit of a full series (every level and window holding requests), off
// the request path.
func BenchmarkTick(b *testing.B) {
	clk := &clock{t: time.Unix(1000, 0)}
	e := New(Options{Window: time.Second, Now: clk.now})
	rng := rand.New(rand.NewPCG(1, 1))
	for w := range 30 {
		for c := 1; c <= 64; c++ {
			e.Observe("u:1", 100*time.Millisecond, float64(c), time.Duration(hockey(float64(c), 20, 50, 5)*(1+0.1*rng.NormFloat64()))*time.Millisecond, time.Second)
		}
		clk.t = clk.t.Add(time.Second)
		_ = w
		e.Tick()
	}
	b.ResetTimer()
	for range b.N {
		e.Tick()
	}
}

// TestRemainingAgreeInSign: the last window after a load still sees the load's requests in
// flight (concurrency 12 against an SLO concurrency of 6) while its arrival rate fell to 10 of
// the SLO's 40 a second: both remaining figures say capacity is left, and both say none when
// the rate is past the SLO's.
func TestRemainingAgreeInSign(t *testing.T) {
	c := Interval{Estimate: ptr(6.0), Low: ptr(5.0), High: ptr(7.0)}
	x := Interval{Estimate: ptr(40.0), Low: ptr(35.0), High: ptr(45.0)}
	for _, rate := range []float64{0, 10, 39, 40, 50} {
		r := remainingConcurrency(c, x, rate)
		left := x.less(rate)
		for i, pair := range [][2]*float64{{r.Estimate, left.Estimate}, {r.Low, left.Low}, {r.High, left.High}} {
			if pair[0] == nil || pair[1] == nil || (*pair[0] > 0) != (*pair[1] > 0) {
				t.Errorf("rate %v, end %d: concurrency left %v, rate left %v", rate, i, deref(pair[0]), deref(pair[1]))
			}
		}
	}
	if r := remainingConcurrency(c, Interval{Estimate: ptr(40.0)}, 10); r.High != nil || math.Abs(*r.Estimate-4.5) > 1e-12 {
		t.Errorf("an unbounded rate end gives an unbounded concurrency end: %+v", r)
	}
}
