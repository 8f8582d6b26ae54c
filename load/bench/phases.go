package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/load/gen"
)

// Phases are a benchmark's shapes over time, with AIPerf's flag names and meanings
// (aiperf/common/config/loadgen_config.py, 2026), in seconds as the flags give them; zero is
// unset (AIPerf's default) for every member but Timeout, which must be positive. RateRamp
// (--request-rate-ramp-duration) raises an open loop's rate from rate×0.1/RateRamp to the rate
// in 0.1 s steps; ConcurrencyRamp (--concurrency-ramp-duration) raises a closed loop's
// concurrency from 1, one slot at even intervals. WarmupDuration (--warmup-duration) is a
// warmup before the profiling phase, whose load is the profiling phase's but where the Warmup*
// members (--warmup-request-rate, --warmup-concurrency, --warmup-arrival-pattern,
// --warmup-request-rate-ramp-duration, --warmup-concurrency-ramp-duration) say otherwise.
// Timeout is --request-timeout-seconds (Spec.RequestTimeout), SliceDuration --slice-duration
// (Spec.SliceDuration).
type Phases struct {
	RateRamp, ConcurrencyRamp             float64
	WarmupDuration, WarmupRate            float64
	WarmupConcurrency                     int
	WarmupPattern                         string
	WarmupRateRamp, WarmupConcurrencyRamp float64
	Timeout, SliceDuration                float64
}

// DefaultRequestTimeout is AIPerf's --request-timeout-seconds default: 6 hours.
const DefaultRequestTimeout = 21600

// Apply checks the phases and sets them on spec, which was built for the run's concurrency
// (level) and arrivals (arr, its rate set for an open loop), with the profiling phase's random
// stream (seed); warmupCount is the warmup's request count (--warmup-request-count).
func (p Phases) Apply(spec *Spec, arr gen.ArrivalSpec, level, warmupCount int, seed uint64) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"--request-rate-ramp-duration", p.RateRamp}, {"--concurrency-ramp-duration", p.ConcurrencyRamp},
		{"--warmup-duration", p.WarmupDuration}, {"--warmup-request-rate", p.WarmupRate},
		{"--warmup-request-rate-ramp-duration", p.WarmupRateRamp}, {"--warmup-concurrency-ramp-duration", p.WarmupConcurrencyRamp},
		{"--slice-duration", p.SliceDuration}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s %v: want a finite number ≥ 0", f.name, f.v))
		}
	}
	timeout, err := RequestTimeout(p.Timeout)
	if err != nil {
		errs = append(errs, err)
	}
	if p.WarmupConcurrency < 0 || p.WarmupConcurrency > limits.MaxConcurrency {
		errs = append(errs, fmt.Errorf("--warmup-concurrency %d: want 0 to %d (limits.MaxConcurrency)", p.WarmupConcurrency, limits.MaxConcurrency))
	}
	rate := arr.Rate > 0
	if p.RateRamp > 0 && !rate {
		errs = append(errs, errors.New("--request-rate-ramp-duration needs --request-rate"))
	}
	if p.ConcurrencyRamp > 0 && level <= 0 {
		errs = append(errs, errors.New("--concurrency-ramp-duration needs --concurrency"))
	}
	ramped := p.RateRamp > 0 || p.ConcurrencyRamp > 0 || p.WarmupRateRamp > 0 || p.WarmupConcurrencyRamp > 0
	if ramped && spec.Worker.Split() {
		errs = append(errs, errors.New("ramps run in one process: --worker-count is not supported with them"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	spec.RequestTimeout = timeout
	if p.SliceDuration > 0 {
		spec.SliceDuration = Seconds(p.SliceDuration)
		d := p.SliceDuration
		spec.Info.Input.Output.SliceDuration = &d
	}
	if level > 0 {
		spec.Schedule.ConcurrencyRamp = Seconds(p.ConcurrencyRamp)
	}
	if p.RateRamp > 0 {
		a, err := gen.NewRateRamp(arr, Seconds(p.RateRamp), rand.New(rand.NewPCG(seed, 0xa7)))
		if err != nil {
			return err
		}
		spec.Schedule.Arrivals = a
	}
	if p.WarmupDuration <= 0 && warmupCount <= 0 {
		return nil
	}
	// The warmup: the profiling phase's load unless the Warmup members say otherwise, ending at
	// warmupCount requests or WarmupDuration, whichever comes first.
	wu := spec.Schedule
	wu.MaxRequests, wu.Duration, wu.Arrivals = spec.Worker.Requests(warmupCount), Seconds(p.WarmupDuration), nil
	if wu.MaxRequests == 0 && wu.Duration == 0 {
		return nil // the worker's share of the warmup's requests is none
	}
	wc := level
	if p.WarmupConcurrency > 0 {
		wc = p.WarmupConcurrency
	}
	wu.Concurrency = spec.Worker.Concurrency(wc)
	wu.ConcurrencyRamp = Seconds(orDefault(p.WarmupConcurrencyRamp, p.ConcurrencyRamp))
	if wc <= 0 {
		wu.ConcurrencyRamp = 0
	}
	warr := arr
	if p.WarmupRate > 0 {
		warr.Rate = p.WarmupRate
	}
	if p.WarmupPattern != "" {
		warr.Pattern = p.WarmupPattern
	}
	if warr.Rate > 0 {
		var err error
		if ramp := orDefault(p.WarmupRateRamp, p.RateRamp); ramp > 0 {
			wu.Arrivals, err = gen.NewRateRamp(warr, Seconds(ramp), rand.New(rand.NewPCG(seed, 0x3a)))
		} else {
			wu.Arrivals, err = spec.Worker.Arrivals(warr, seed, 0x3a)
		}
		if err != nil {
			return fmt.Errorf("warmup: %w", err)
		}
	} else if wu.Concurrency <= 0 {
		return errors.New("the warmup has no load: set --concurrency, --warmup-concurrency or a request rate")
	}
	spec.Warmup = &wu
	return nil
}

// orDefault is v, or def when v is 0.
func orDefault(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// Seconds converts seconds, as flags give them, to a Duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// RequestTimeout checks --request-timeout-seconds and turns it into Spec.RequestTimeout: the
// request is cancelled that long after it was sent and counted as AIPerf counts it (an error of
// type TimeoutError, no HTTP code).
func RequestTimeout(s float64) (time.Duration, error) {
	if !(s > 0) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("--request-timeout-seconds %v: want seconds > 0", s)
	}
	return Seconds(s), nil
}

// GracePeriod turns --benchmark-grace-period seconds into Spec.Grace: "inf" (or anything past
// the longest Duration) is an infinite grace, returned as -1; negative and NaN are errors.
func GracePeriod(s float64) (time.Duration, error) {
	switch {
	case !(s >= 0):
		return 0, fmt.Errorf("--benchmark-grace-period %v: want seconds ≥ 0, or inf", s)
	case s*float64(time.Second) >= math.MaxInt64:
		return -1, nil
	}
	return Seconds(s), nil
}
