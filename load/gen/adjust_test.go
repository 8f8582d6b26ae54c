package gen

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestControlledRescalesTime(t *testing.T) {
	// Base: constant at 1/s (arrivals at 0, 1, 2, … operational seconds).
	c := NewControlled(NewConstant(1), 2)
	steps := []struct {
		name string
		do   func() time.Duration
		want time.Duration
	}{
		{"first arrival at 0", c.Next, 0},
		{"rate 2: the second at 0.5 s", c.Next, 500 * time.Millisecond},
		{"paused at 0.25 s: the pending arrival is parked", func() time.Duration { c.SetRate(0, 250*time.Millisecond); return c.Retime() }, Parked},
		{"resumed at 10 s at rate 1: the half second left of its gap remains", func() time.Duration { c.SetRate(1, 10*time.Second); return c.Retime() }, 10500 * time.Millisecond},
		{"then every second", c.Next, 11500 * time.Millisecond},
		{"rate 4 at 11.5 s, just after releasing: the next gap is a quarter second", func() time.Duration {
			c.SetRate(4, 11500*time.Millisecond)
			return c.Next()
		}, 11750 * time.Millisecond},
		{"ended: no more arrivals", func() time.Duration { c.End(); return c.Retime() }, End},
		{"and Next agrees", c.Next, End},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
}

func TestControlledRunPauseResumeEnd(t *testing.T) {
	// A run at 100/s is paused after 1 s for 2 s, resumed at 50/s for 1 s, and ended: the
	// server sees ~100 requests in the first second, none in the pause, ~50 after, and Run
	// returns once the schedule ends.
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{delay: 10 * time.Millisecond}
		start := time.Now()
		c := NewControlled(NewConstant(1), 100)
		done := make(chan Counters)
		go func() {
			done <- Run(context.Background(), Config{Arrivals: c, Request: numbered,
				Client: &http.Client{Transport: srv}, Start: start, SpinThreshold: -1})
		}()
		time.Sleep(time.Second - time.Millisecond)
		c.SetRate(0, time.Since(start))
		time.Sleep(2 * time.Second)
		c.SetRate(50, time.Since(start))
		time.Sleep(time.Second - time.Millisecond)
		c.End()
		cnt := <-done
		var first, pause, after int
		for _, a := range srv.arrived {
			switch at := a.at.Sub(start); {
			case at < time.Second:
				first++
			case at < 3*time.Second:
				pause++
			default:
				after++
			}
		}
		if first != 100 || pause != 0 || after != 50 {
			t.Fatalf("arrivals: %d in the first second, %d in the pause, %d after; want 100, 0, 50", first, pause, after)
		}
		if cnt.Sent != 150 || cnt.Lag.Max != 0 {
			t.Fatalf("counters %+v", cnt)
		}
	})
}
