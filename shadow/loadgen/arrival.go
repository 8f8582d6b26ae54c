// Package loadgen generates open-loop LLM API load: arrival processes that return the next
// intended send time, and a runner that sends each request at its intended time without ever
// letting a slow response hold back the schedule.
package loadgen

import (
	"math/rand/v2"
	"time"
)

// Arrivals yields the intended send times of successive requests as offsets from the start of
// the run. Implementations hold no clock: time is the caller's, so schedules are deterministic
// for a given seed.
type Arrivals interface {
	// Next returns the offset of the next request's intended send time.
	Next() time.Duration
}

// Poisson arrivals at rate λ per second: inter-arrival gaps are exponential with mean 1/λ.
type Poisson struct {
	rate float64
	rng  *rand.Rand
	t    float64 // seconds since start
}

// NewPoisson returns Poisson arrivals at rate requests per second, drawn from rng.
func NewPoisson(rate float64, rng *rand.Rand) *Poisson {
	return &Poisson{rate: rate, rng: rng}
}

// Next returns the next intended send time.
func (p *Poisson) Next() time.Duration {
	p.t += p.rng.ExpFloat64() / p.rate
	return time.Duration(p.t * float64(time.Second))
}

// Constant arrivals every 1/rate seconds, the first one at 0.
type Constant struct {
	gap float64
	n   int64
}

// NewConstant returns constant arrivals at rate requests per second.
func NewConstant(rate float64) *Constant { return &Constant{gap: 1 / rate} }

// Next returns the next intended send time: n/rate for the n-th request (no accumulated
// rounding drift).
func (c *Constant) Next() time.Duration {
	d := time.Duration(float64(c.n) * c.gap * float64(time.Second))
	c.n++
	return d
}
