package gen

import (
	"math"
	"sync"
	"time"
)

// Adjustable is an Arrivals whose schedule may change while [Run] waits for the pending
// arrival: a rate set through an admin API, a pause, a new process. Run waits on Changed as
// well as on the pacer; when the channel fires it asks Retime for the pending arrival's new
// time instead of sending it at the old one. Next is called only after the previous arrival
// was released, so the process always knows which arrival is pending.
type Adjustable interface {
	Arrivals
	// Changed returns a channel that is closed at the next change of the schedule.
	Changed() <-chan struct{}
	// Retime returns the new intended time of the arrival the last Next returned (or [End]).
	Retime() time.Duration
}

// Parked is the intended time a [Controlled] schedule gives its pending arrival while its rate
// is zero: far enough to never come, but not [End], which would end the run. A change wakes
// the run long before.
const Parked = End / 2

// Controlled arrivals follow a base process whose rate can be changed, set to zero (paused)
// and restored at any time, safely from other goroutines, while a run uses them.
//
// The base process runs in its own "operational" time s; the run's time t advances s at the
// current rate: ds = rate·dt. Arrival k of the base process, due at operational time sₖ, is sent
// when s reaches sₖ. For a base process of rate 1 this is exactly time rescaling: a unit-rate
// Poisson process becomes Poisson of the new rate from the moment of the change (memoryless,
// so no bias either way), a gamma renewal process keeps its shape, a constant one keeps its
// phase, and a trace replayed at speedup x is base = the trace, rate = x. Rate zero freezes s:
// the pending arrival is [Parked], and resuming continues where the schedule stopped, with no
// burst of the arrivals that were due during the pause.
type Controlled struct {
	mu      sync.Mutex
	base    Arrivals
	rate    float64
	tA      time.Duration // run time of the last change
	sA      float64       // operational seconds at tA
	pending float64       // operational seconds of the pending arrival
	has     bool          // a pending arrival was drawn
	ended   bool
	ch      chan struct{}
}

// NewControlled returns arrivals following base at rate (operational seconds per second;
// base rates multiply by it). A rate of zero starts paused.
func NewControlled(base Arrivals, rate float64) *Controlled {
	c := &Controlled{base: base, ch: make(chan struct{})}
	c.rate = clampRate(rate)
	return c
}

func clampRate(rate float64) float64 {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return 0
	}
	return rate
}

// wall is the run time at which operational time reaches s, under c.mu.
func (c *Controlled) wall(s float64) time.Duration {
	switch {
	case c.ended:
		return End
	case c.rate <= 0:
		return Parked
	}
	t := c.tA + seconds((s-c.sA)/c.rate)
	return max(t, c.tA)
}

// Next draws the next arrival of the base process and returns its run time.
func (c *Controlled) Next() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next()
}

func (c *Controlled) next() time.Duration {
	if c.ended {
		return End
	}
	d := c.base.Next()
	if d == End {
		c.ended = true
		return End
	}
	c.pending, c.has = d.Seconds(), true
	return c.wall(c.pending)
}

// Retime returns the pending arrival's run time under the current rate.
func (c *Controlled) Retime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.has {
		return c.next()
	}
	return c.wall(c.pending)
}

// Changed returns a channel closed at the next change.
func (c *Controlled) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *Controlled) wake() {
	close(c.ch)
	c.ch = make(chan struct{})
}

// SetRate changes the rate at run time now (the offset from the run's start). Operational time
// up to now advanced at the old rate; from now on it advances at the new one. A negative, NaN
// or infinite rate counts as zero.
func (c *Controlled) SetRate(rate float64, now time.Duration) {
	rate = clampRate(rate)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rate == c.rate {
		return
	}
	if now > c.tA {
		c.sA += (now - c.tA).Seconds() * c.rate
		c.tA = now
	}
	c.rate = rate
	c.wake()
}

// Rate returns the current rate.
func (c *Controlled) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// End ends the schedule: the pending arrival is never sent and Next returns [End], so the run
// stops releasing requests and returns once those in flight are done.
func (c *Controlled) End() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.ended = true
		c.wake()
	}
}

var _ Adjustable = (*Controlled)(nil)
