package gen

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestPacerNeverEarly(t *testing.T) {
	// On the real clock, the one timing property that cannot flake: Wait does not return
	// before its deadline, in any mode. (How late it returns is BenchmarkPacer's business.)
	for _, spin := range []time.Duration{0, 50 * time.Microsecond, DefaultSpinThreshold} {
		p := NewPacer(spin)
		for i := range 20 {
			deadline := time.Now().Add(time.Duration(i%4) * 100 * time.Microsecond)
			if err := p.Wait(context.Background(), deadline); err != nil {
				t.Fatal(err)
			}
			if now := time.Now(); now.Before(deadline) {
				t.Fatalf("spin %v: Wait returned %v before its deadline", spin, deadline.Sub(now))
			}
		}
	}
}

func TestPacerOnFakeClock(t *testing.T) {
	// Inside a synctest bubble the clock moves only when every goroutine is blocked, so a
	// spinning pacer would spin forever; it must notice and finish the wait on its timer,
	// releasing exactly at the deadline.
	for _, spin := range []time.Duration{0, DefaultSpinThreshold, time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			p := NewPacer(spin)
			start := time.Now()
			for _, at := range []time.Duration{0, 3 * time.Millisecond, 3 * time.Millisecond, 10 * time.Second} {
				if err := p.Wait(context.Background(), start.Add(at)); err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != at {
					t.Errorf("spin %v: released at %v, want %v", spin, got, at)
				}
			}
		})
	}
}

func TestPacerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := NewPacer(DefaultSpinThreshold).Wait(ctx, start.Add(time.Hour))
		if err != context.DeadlineExceeded || time.Since(start) != time.Second {
			t.Fatalf("Wait = %v after %v, want the context's error after 1s", err, time.Since(start))
		}
	})
}
