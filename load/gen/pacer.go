package gen

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// DefaultSpinThreshold is how long before a deadline a [Pacer] stops sleeping on a timer and
// starts spinning. A Go timer usually fires late by up to about a millisecond when the process
// is otherwise idle (an idle runtime blocks in the poller with millisecond resolution), so 1 ms
// of spinning covers that lateness; BenchmarkPacer measures it.
const DefaultSpinThreshold = time.Millisecond

// spinRateLimit is the rate above which the pacer does not spin by default: its gaps are then
// shorter than the spin threshold, so it would spin without pause and take a whole core from
// the HTTP client (and, on a small machine, from the server under test), while a runtime that
// busy fires its timers promptly anyway. Lateness is measured either way (schedule lag).
const spinRateLimit = 1000

// SpinFor is the Config.SpinThreshold of a spin setting (--pacer-spin) at a rate in requests
// per second: a positive spin as it is, zero timer only (-1), and a negative one the default
// for the rate, DefaultSpinThreshold up to spinRateLimit and timer only above.
func SpinFor(spin time.Duration, rate float64) time.Duration {
	switch {
	case spin > 0:
		return spin
	case spin == 0 || rate > spinRateLimit:
		return -1 // timer only
	}
	return DefaultSpinThreshold
}

// spinStallLimit is how many consecutive spins may see an unchanged clock before the pacer
// decides that the clock only moves when it blocks, as inside a testing/synctest bubble, and
// sleeps on the timer for the rest instead of spinning forever. A real monotonic clock reads
// differently after every runtime.Gosched, so this never triggers outside such a bubble except
// on a clock far coarser than any Go supports.
const spinStallLimit = 64

// Pacer waits for deadlines more precisely than a timer alone. Wait sleeps on a timer until
// Spin before the deadline, then spins, yielding the processor (runtime.Gosched) between
// clock reads so that other goroutines still run, until the deadline has passed. The price is
// CPU: at most Spin of busy waiting per deadline, so up to one core when the gap between
// deadlines is shorter than Spin. A Pacer is not safe for concurrent use.
type Pacer struct {
	// Spin is how long before each deadline to switch from sleeping to spinning. Zero or
	// negative means never spin: the timer alone, for comparison or to save the CPU.
	Spin  time.Duration
	timer *time.Timer
}

// NewPacer returns a Pacer that spins for the last spin before each deadline (none if spin ≤ 0).
func NewPacer(spin time.Duration) *Pacer { return &Pacer{Spin: spin} }

// Wait returns once time.Now() is not before deadline, or with ctx's error if ctx is done while
// it sleeps (the spinning phase, at most Spin long, does not look at ctx). It never returns
// early, and returns at once for a deadline already past.
func (p *Pacer) Wait(ctx context.Context, deadline time.Time) error {
	return p.WaitOr(ctx, deadline, nil)
}

// ErrWoken is what [Pacer.WaitOr] returns when its wake channel fired before the deadline.
var ErrWoken = errors.New("loadgen: pacer woken before its deadline")

// WaitOr is Wait that also returns, with ErrWoken, when wake is closed (or receives) while it
// sleeps; a nil wake never fires. It lets a schedule that changes (see [Adjustable]) abandon
// a deadline it no longer wants.
func (p *Pacer) WaitOr(ctx context.Context, deadline time.Time, wake <-chan struct{}) error {
	spin := max(p.Spin, 0)
	if d := time.Until(deadline) - spin; d > 0 {
		if err := p.sleep(ctx, d, wake); err != nil {
			return err
		}
	}
	if spin == 0 {
		// A timer never fires early, but a caller passing a deadline already reached skips the
		// sleep; either way the deadline has passed.
		return nil
	}
	last, stalls := time.Now(), 0
	for {
		now := time.Now()
		if !now.Before(deadline) {
			return nil
		}
		if now.Equal(last) {
			if stalls++; stalls >= spinStallLimit {
				return p.sleep(ctx, deadline.Sub(now), wake)
			}
		} else {
			last, stalls = now, 0
		}
		runtime.Gosched()
	}
}

// sleep blocks for d on the pacer's timer, or until ctx is done or wake fires.
func (p *Pacer) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d) // since Go 1.23 a Reset timer never delivers a stale tick
	}
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	case <-wake:
		p.timer.Stop()
		return ErrWoken
	}
}
