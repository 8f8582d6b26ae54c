package gen

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// RateRampStep is how often AIPerf's request-rate ramp changes the rate: its ramper sets a new
// rate every 0.1 s (AIPerf's TIMING.RATE_RAMP_UPDATE_INTERVAL).
const RateRampStep = 100 * time.Millisecond

// RateRamp is AIPerf's --request-rate-ramp-duration: the rate starts at target × step/over
// (one step's share of the target, so that a target below 1 req/s never starts above it),
// rises linearly in steps of RateRampStep and reaches the target at over, where it stays. The
// arrival pattern keeps its shape: each gap is the pattern's gap at rate 1 divided by the rate
// in force when the previous request was released, which is how AIPerf's set_rate works (the
// next interval is drawn at the new rate; the one already waited for is not re-timed). So the
// first gap is drawn at the start rate: with a constant pattern at 10 req/s ramped over 10 s
// the first request goes out at 0, the second 10 s later.
type RateRamp struct {
	unit   Arrivals // the pattern at rate 1: its gaps are the unit gaps
	target float64
	over   float64 // seconds
	step   float64 // seconds
	prevU  time.Duration
	t      float64 // seconds since start of the last arrival
}

// NewRateRamp returns spec's pattern ramped up to spec.Rate over the duration over, drawing
// from rng (unused by the constant pattern). over must be positive.
func NewRateRamp(spec ArrivalSpec, over time.Duration, rng *rand.Rand) (*RateRamp, error) {
	if over <= 0 {
		return nil, errors.New("ramp duration must be positive")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	unit := spec
	unit.Rate = 1
	a, err := unit.New(rng)
	if err != nil {
		return nil, err
	}
	return &RateRamp{unit: a, target: spec.Rate, over: over.Seconds(), step: RateRampStep.Seconds()}, nil
}

// RateAt returns the rate in force at t seconds from the start: target × step/over until the
// first step, then start + (target − start) × (k·step)/over in step k, then the target.
func (r *RateRamp) RateAt(t float64) float64 {
	if t >= r.over {
		return r.target
	}
	start := r.target * r.step / r.over
	k := math.Floor(t / r.step)
	return start + (r.target-start)*(k*r.step)/r.over
}

// Next returns the next intended send time, or [End] when the pattern ends.
func (r *RateRamp) Next() time.Duration {
	u := r.unit.Next()
	if u == End {
		return End
	}
	gap := (u - r.prevU).Seconds()
	r.prevU = u
	r.t += gap / r.RateAt(r.t)
	return seconds(r.t)
}

// ConcurrencyStep returns when slot k (from 0) of a concurrency ramp to target slots over
// the duration over opens: AIPerf's --concurrency-ramp-duration starts at one slot and adds
// one at even intervals, the last at over, so slot k opens at over × k/(target−1). Slot 0 is
// open from the start, and every slot is when over is not positive or target is 1.
func ConcurrencyStep(k, target int, over time.Duration) time.Duration {
	if k <= 0 || over <= 0 || target <= 1 {
		return 0
	}
	return time.Duration(float64(over) * float64(k) / float64(target-1))
}

// waitSlot waits until slot k of a ramped closed loop opens; false means the run ended first
// (ctx done, or the Duration reached before the slot opened).
func (r *runner) waitSlot(ctx context.Context, k int) bool {
	d := ConcurrencyStep(k, r.cfg.Concurrency, r.cfg.ConcurrencyRamp)
	if d <= 0 {
		return true
	}
	if r.cfg.Duration > 0 && d >= r.cfg.Duration {
		return false
	}
	t := time.NewTimer(time.Until(r.start.Add(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// openSlots opens the slots of a ramped open loop with a ceiling, one at a time, until every
// slot is open, ctx is done or stop is closed (the schedule ended: the open slots then drain
// what is queued). A slot that opens while requests are queued sends the oldest at once.
func (r *runner) openSlots(ctx context.Context, w *workers, stop <-chan struct{}) {
	for k := 1; k < r.cfg.MaxInFlight; k++ {
		d := ConcurrencyStep(k, r.cfg.MaxInFlight, r.cfg.ConcurrencyRamp)
		t := time.NewTimer(time.Until(r.start.Add(d)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-stop:
			t.Stop()
			return
		}
		// A new slot is what a finished sender's is: it takes the oldest queued request or
		// becomes free.
		if st, ok := r.q.next(); ok {
			r.queued.Add(-1)
			w.run(func() { r.sendQueued(ctx, st) })
		}
	}
}
