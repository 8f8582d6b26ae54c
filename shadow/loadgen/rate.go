package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// RatePoint is one corner of a piecewise-linear request rate: Rate requests per second at
// offset At from the start.
type RatePoint struct {
	At   time.Duration
	Rate float64
}

// Shape says how a [RateSeries] spreads its arrivals under the varying rate.
type Shape int

const (
	// ShapePoisson makes a non-homogeneous Poisson process: independent arrivals whose count in
	// any window is Poisson with mean ∫λ over the window.
	ShapePoisson Shape = iota
	// ShapeConstant places the arrivals deterministically, request n when the expected count
	// ∫λ first exceeds n: evenly spaced at a steady rate, closer together as the rate rises.
	ShapeConstant
)

// RateSeries arrivals follow a piecewise-linear rate λ(t) through its points (AIPerf's
// --request-rate-series; a ramp is the two-point case). The rate before the first point does
// not arise (the first point is at 0) and after the last point it stays at the last rate, so
// a series ending at rate 0 ends the schedule.
//
// Arrivals come from time rescaling. With the cumulative rate Λ(t) = ∫₀ᵗ λ(s) ds, the times
// Tₙ = Λ⁻¹(Sₙ) are a non-homogeneous Poisson process of rate λ when Sₙ are the arrival times
// of a unit-rate homogeneous one (sums of Exp(1) gaps), and evenly paced when Sₙ = n. Here
// Λ⁻¹(s) means inf{t : Λ(t) > s}, so a stretch of zero rate is skipped rather than landed in.
// Λ is quadratic on each segment, so the inverse is closed-form: on a segment starting at tᵢ
// with rate a and slope b, the time u past tᵢ at which Λ has grown by c solves
// b·u²/2 + a·u = c, taken in the cancellation-free form u = 2c / (a + √(a² + 2bc)), which
// holds for b = 0 and for a = 0 alike. Unlike thinning, this costs one random draw and O(1)
// arithmetic per arrival however peaked the rate is.
type RateSeries struct {
	t0    []float64 // segment start, seconds
	rate  []float64 // rate at segment start
	slope []float64 // rate change per second within the segment; 0 for the last
	cum   []float64 // Λ at segment start

	shape Shape
	rng   *rand.Rand
	n     int64   // arrivals so far (ShapeConstant)
	s     float64 // unit-rate time of the last arrival (ShapePoisson)
	seg   int     // the segment the last arrival fell in; arrivals only move forward
}

// NewRateSeries returns arrivals following the piecewise-linear rate through points. The first
// point must be at 0, the points strictly increasing in time, and every rate finite and not
// negative; all problems are reported together. rng may be nil for [ShapeConstant].
func NewRateSeries(points []RatePoint, shape Shape, rng *rand.Rand) (*RateSeries, error) {
	if err := validatePoints(points); err != nil {
		return nil, err
	}
	if shape != ShapeConstant && shape != ShapePoisson {
		return nil, fmt.Errorf("unknown arrival shape %d", shape)
	}
	if shape == ShapePoisson && rng == nil {
		return nil, errors.New("poisson arrival shape needs a random source")
	}
	n := len(points)
	r := &RateSeries{
		t0: make([]float64, n), rate: make([]float64, n), slope: make([]float64, n),
		cum: make([]float64, n), shape: shape, rng: rng,
	}
	for i, p := range points {
		r.t0[i], r.rate[i] = p.At.Seconds(), p.Rate
		if i > 0 {
			dt := r.t0[i] - r.t0[i-1]
			r.slope[i-1] = (r.rate[i] - r.rate[i-1]) / dt
			r.cum[i] = r.cum[i-1] + (r.rate[i-1]+r.rate[i])/2*dt
		}
	}
	return r, nil
}

// NewRamp returns arrivals whose rate rises (or falls) linearly from `from` to `to` requests
// per second over the duration `over`, and stays at `to` afterwards (AIPerf's
// --request-rate-ramp-duration, without its 0.1 s steps).
func NewRamp(from, to float64, over time.Duration, shape Shape, rng *rand.Rand) (*RateSeries, error) {
	if over <= 0 {
		return nil, fmt.Errorf("ramp duration %v must be positive", over)
	}
	return NewRateSeries([]RatePoint{{0, from}, {over, to}}, shape, rng)
}

func validatePoints(points []RatePoint) error {
	if len(points) == 0 {
		return errors.New("rate series has no points")
	}
	var errs []error
	if points[0].At != 0 {
		errs = append(errs, fmt.Errorf("rate point 0 is at %v, want the first point at 0", points[0].At))
	}
	for i, p := range points {
		if math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) || p.Rate < 0 {
			errs = append(errs, fmt.Errorf("rate point %d: rate %v is not a finite, non-negative number", i, p.Rate))
		}
		if i > 0 && p.At <= points[i-1].At {
			errs = append(errs, fmt.Errorf("rate point %d at %v is not after point %d at %v", i, p.At, i-1, points[i-1].At))
		}
	}
	return errors.Join(errs...)
}

// Next returns the next intended send time, or [End] once the rate has fallen to zero for good.
func (r *RateSeries) Next() time.Duration {
	var s float64
	if r.shape == ShapeConstant {
		s = float64(r.n)
		r.n++
	} else {
		r.s += r.rng.ExpFloat64()
		s = r.s
	}
	last := len(r.t0) - 1
	for r.seg < last && r.cum[r.seg+1] <= s {
		r.seg++
	}
	i := r.seg
	c := s - r.cum[i]
	if i == last {
		if r.rate[i] == 0 {
			return End
		}
		return seconds(r.t0[i] + c/r.rate[i])
	}
	var u float64
	if c > 0 {
		a, b := r.rate[i], r.slope[i]
		u = 2 * c / (a + math.Sqrt(max(0, a*a+2*b*c)))
	}
	return seconds(r.t0[i] + u)
}

// Expected returns Λ(t), the expected number of arrivals in [0, t): the integral of the rate.
func (r *RateSeries) Expected(t time.Duration) float64 {
	x := t.Seconds()
	if x <= 0 {
		return 0
	}
	i := len(r.t0) - 1
	for i > 0 && r.t0[i] > x {
		i--
	}
	u := x - r.t0[i]
	return r.cum[i] + r.rate[i]*u + r.slope[i]*u*u/2
}
