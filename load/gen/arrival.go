package gen

import (
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals yields the intended send times of successive requests as offsets from the start of
// the run, in non-decreasing order. Implementations hold no clock: time is the caller's, so
// schedules are deterministic for a given seed. An Arrivals is not safe for concurrent use.
type Arrivals interface {
	// Next returns the offset of the next request's intended send time, or [End] when the
	// process has no more arrivals (a finished trace, a rate that fell to zero for good).
	Next() time.Duration
}

// End is what [Arrivals.Next] returns once a process has no more arrivals.
const End = time.Duration(math.MaxInt64)

// seconds converts a float number of seconds to a Duration, rounding to the nearest nanosecond
// and saturating at [End] (a rate so low that the next arrival is centuries away never comes).
func seconds(s float64) time.Duration { return nanos(s * 1e9) }

// nanos converts a float number of nanoseconds to a Duration the same way.
func nanos(ns float64) time.Duration {
	ns = math.Round(ns)
	if !(ns < math.MaxInt64) { // also catches +Inf and NaN
		return End
	}
	return time.Duration(ns)
}

// Poisson arrivals at rate λ per second: inter-arrival gaps are independent and exponential
// with mean 1/λ (gap = −ln(U)/λ), so the count in any window of length t is Poisson with mean
// λt and the coefficient of variation of the gaps is 1. This is AIPerf's default
// (--arrival-pattern poisson) and what a large population of independent users produces.
type Poisson struct {
	rate float64
	rng  *rand.Rand
	t    float64 // seconds since start, accumulated in float64 so nanosecond rounding never drifts
}

// NewPoisson returns Poisson arrivals at rate requests per second, drawn from rng. The first
// arrival is one exponential gap after the start, not at 0.
func NewPoisson(rate float64, rng *rand.Rand) *Poisson {
	return &Poisson{rate: rate, rng: rng}
}

// Next returns the next intended send time.
func (p *Poisson) Next() time.Duration {
	p.t += p.rng.ExpFloat64() / p.rate
	return seconds(p.t)
}

// Constant arrivals every 1/λ seconds, the first one at 0: request n (from 0) is due at exactly
// n/λ, computed from n each time rather than by adding gaps, so a gap that is not a whole
// number of nanoseconds (λ = 3) never accumulates rounding drift.
type Constant struct {
	rate float64
	n    int64
}

// NewConstant returns constant arrivals at rate requests per second.
func NewConstant(rate float64) *Constant { return &Constant{rate: rate} }

// Next returns the next intended send time, n/rate for the n-th request.
func (c *Constant) Next() time.Duration {
	d := seconds(float64(c.n) / c.rate)
	c.n++
	return d
}
