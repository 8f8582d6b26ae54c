package gen

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Arrival pattern names, as AIPerf's --arrival-pattern spells them.
const (
	PatternConstant = "constant"
	PatternPoisson  = "poisson"
	PatternGamma    = "gamma"
)

// ArrivalSpec is a rate-driven arrival process as a user configures it, with AIPerf's flags:
// --arrival-pattern (alias --request-rate-mode), --request-rate and --arrival-smoothness
// (alias --vllm-burstiness).
type ArrivalSpec struct {
	// Pattern is constant, poisson or gamma (case-insensitive). Empty means poisson, AIPerf's
	// default.
	Pattern string
	// Rate is the mean request rate in requests per second; fractional rates are fine. It must
	// be positive and finite.
	Rate float64
	// Smoothness is the gamma shape k: below 1 burstier than Poisson, 1 Poisson, above 1
	// smoother (inter-arrival CV = 1/√k). Zero means 1. Any other value is an error unless
	// Pattern is gamma, since it would otherwise be silently ignored.
	Smoothness float64
}

// RegisterFlags defines the spec's flags, with AIPerf's names and aliases, on fs. Defaults are
// the spec's current values, so set Pattern and Smoothness first if the defaults should show.
func (s *ArrivalSpec) RegisterFlags(fs *flag.FlagSet) {
	const patternUsage = "arrival pattern: constant, poisson or gamma"
	const smoothUsage = "gamma shape k: <1 bursty, 1 Poisson, >1 smooth (vLLM --burstiness)"
	fs.StringVar(&s.Pattern, "arrival-pattern", s.Pattern, patternUsage)
	fs.StringVar(&s.Pattern, "request-rate-mode", s.Pattern, "alias of --arrival-pattern")
	fs.Float64Var(&s.Rate, "request-rate", s.Rate, "mean requests per second")
	fs.Float64Var(&s.Smoothness, "arrival-smoothness", s.Smoothness, smoothUsage)
	fs.Float64Var(&s.Smoothness, "vllm-burstiness", s.Smoothness, "alias of --arrival-smoothness")
}

// pattern returns the normalised pattern name.
func (s ArrivalSpec) pattern() string {
	p := strings.ToLower(strings.TrimSpace(s.Pattern))
	if p == "" {
		return PatternPoisson
	}
	return p
}

// Validate reports every problem with the spec at once.
func (s ArrivalSpec) Validate() error {
	var errs []error
	p := s.pattern()
	switch p {
	case PatternConstant, PatternPoisson, PatternGamma:
	default:
		errs = append(errs, fmt.Errorf("arrival pattern %q: want constant, poisson or gamma", s.Pattern))
	}
	if !(s.Rate > 0) || math.IsInf(s.Rate, 1) {
		errs = append(errs, fmt.Errorf("request rate %v must be a positive, finite number of requests per second", s.Rate))
	}
	switch k := s.Smoothness; {
	case math.IsNaN(k) || math.IsInf(k, 0) || k < 0:
		errs = append(errs, fmt.Errorf("arrival smoothness %v must be a positive, finite number", k))
	case k != 0 && k != 1 && p != PatternGamma:
		errs = append(errs, fmt.Errorf("arrival smoothness %v applies only to the gamma arrival pattern, not %q", k, p))
	}
	return errors.Join(errs...)
}

// New returns the arrival process the spec describes, drawing from rng (unused by constant).
func (s ArrivalSpec) New(rng *rand.Rand) (Arrivals, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.pattern() {
	case PatternConstant:
		return NewConstant(s.Rate), nil
	case PatternGamma:
		k := s.Smoothness
		if k == 0 {
			k = 1
		}
		return NewGamma(s.Rate, k, rng), nil
	default:
		return NewPoisson(s.Rate, rng), nil
	}
}
