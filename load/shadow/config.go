package shadow

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Hard ceilings no configuration, reload or admin call can exceed.
const (
	// HardMaxRate is the largest request rate (requests per second) of one shadow load.
	HardMaxRate = 2000
	// HardMaxInFlight is the largest number of requests one shadow load has in flight.
	HardMaxInFlight = 4096
)

// DefaultMaxInFlight is a load's bound on requests in flight when none is configured.
const DefaultMaxInFlight = 64

// Source is what a runner sends: every request is a POST of one of Bodies to URL.
type Source struct {
	// URL is where requests go (in the proxy, the live route through the proxy itself).
	URL string
	// Header is sent with every request (Content-Type is set to application/json).
	Header http.Header
	// Mark, when set, marks each request's header (the proxy's signed class mark).
	Mark func(http.Header)
	// Bodies are the request bodies: request n of a synthetic load sends Bodies[n mod len], a
	// trace load sends Bodies[n] at the n-th timestamp.
	Bodies [][]byte
	// Key identifies the content, so that a reconfiguration can tell whether it changed.
	Key string
}

// Config is one shadow load.
type Config struct {
	// Name identifies the load (in the admin API, logs and metrics).
	Name string
	// Source makes the requests.
	Source *Source
	// Arrival is the arrival process of a synthetic load; its Rate is the configured rate.
	// Ignored for a trace load.
	Arrival gen.ArrivalSpec
	// Seed seeds the arrival process.
	Seed uint64
	// Trace, when set, replays these timestamps (sorted) instead of a synthetic process, at
	// Speedup times the recorded pace.
	Trace   []time.Duration
	Speedup float64
	// MaxRate caps the rate an admin call may set (default Arrival.Rate, at most HardMaxRate).
	MaxRate float64
	// MaxInFlight bounds requests in flight; arrivals beyond it are dropped and counted
	// (default 64, at most HardMaxInFlight).
	MaxInFlight int
	// StartAfter delays the load after the runner starts; Duration ends it (0: runs until
	// stopped). Window, when set, restricts it to a daily UTC time window.
	StartAfter, Duration time.Duration
	Window               *gen.Window
	// Headroom, when set, makes the runner a headroom probe (see HeadroomConfig); the rate
	// then comes from its steps.
	Headroom *HeadroomConfig
	// Client sends the requests (default: a client with a transport of its own).
	Client *http.Client
	// Ready, when set, is asked on every tick until it first returns true; the load waits
	// until then (in the proxy: until the route's listener accepts connections, since Caddy
	// may start the llmtap app before the HTTP app). It is called without the runner's lock.
	Ready func() bool
	// OnHeadroom, when set, is called once with the report when a headroom probe finishes,
	// from the runner's goroutine.
	OnHeadroom func(HeadroomReport)
}

// HeadroomConfig is a headroom probe: it raises the shadow rate from Start by Step every
// StepDuration up to Max, and stops at the first step where the live or the shadow requests
// meet the SLOs less often than Attainment, or the guard rails pause it.
type HeadroomConfig struct {
	Start, Step, Max float64
	StepDuration     time.Duration
	SLOs             []stats.SLO
	// Attainment is the fraction of requests (live, and separately shadow) that must meet
	// every SLO for a step to pass (default 0.95).
	Attainment float64
	// MinLive is how many live requests a step needs before live traffic is judged (default
	// 5); with fewer, the step is judged on the shadow requests alone.
	MinLive int
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("a shadow load needs a name"))
	}
	if c.Source == nil || c.Source.URL == "" || len(c.Source.Bodies) == 0 {
		errs = append(errs, errors.New("no URL or no request bodies"))
	}
	if c.Trace != nil {
		if !(c.Speedup > 0) || math.IsInf(c.Speedup, 0) {
			errs = append(errs, fmt.Errorf("trace speedup %v: want a positive number", c.Speedup))
		}
		if c.Source != nil && len(c.Source.Bodies) != len(c.Trace) {
			errs = append(errs, fmt.Errorf("trace: %d timestamps but %d bodies", len(c.Trace), len(c.Source.Bodies)))
		}
	} else if c.Headroom == nil {
		if err := c.Arrival.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Arrival.Rate > HardMaxRate || c.MaxRate > HardMaxRate {
		errs = append(errs, fmt.Errorf("rate and max_rate must not exceed the hard ceiling of %d requests/s", HardMaxRate))
	}
	if c.MaxRate < 0 || (c.MaxRate > 0 && c.Arrival.Rate > c.MaxRate) {
		errs = append(errs, fmt.Errorf("rate %v exceeds max_rate %v", c.Arrival.Rate, c.MaxRate))
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > HardMaxInFlight {
		errs = append(errs, fmt.Errorf("max_in_flight %d: want 1-%d", c.MaxInFlight, HardMaxInFlight))
	}
	if c.StartAfter < 0 || c.Duration < 0 {
		errs = append(errs, errors.New("start_after and duration must not be negative"))
	}
	if h := c.Headroom; h != nil {
		if !(h.Start > 0) || !(h.Step > 0) || !(h.Max >= h.Start) || h.Max > HardMaxRate {
			errs = append(errs, fmt.Errorf("headroom: want 0 < start ≤ max ≤ %d and step > 0 (start %v, step %v, max %v)", HardMaxRate, h.Start, h.Step, h.Max))
		}
		if h.StepDuration < 100*time.Millisecond {
			errs = append(errs, fmt.Errorf("headroom step_duration %v: want at least 100ms", h.StepDuration))
		}
		if len(h.SLOs) == 0 {
			errs = append(errs, errors.New("headroom: slo is required (AIPerf goodput metric:value pairs)"))
		}
		if h.Attainment < 0 || h.Attainment > 1 {
			errs = append(errs, fmt.Errorf("headroom attainment %v: want a fraction in (0, 1]", h.Attainment))
		}
		if c.MaxRate > 0 && h.Max > c.MaxRate {
			errs = append(errs, fmt.Errorf("headroom max %v exceeds max_rate %v", h.Max, c.MaxRate))
		}
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults of a validated config.
func (c Config) withDefaults() Config {
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxRate == 0 {
		c.MaxRate = c.Arrival.Rate
		if c.Headroom != nil {
			c.MaxRate = c.Headroom.Max
		}
		if c.Trace != nil || c.MaxRate == 0 {
			c.MaxRate = HardMaxRate
		}
	}
	if h := c.Headroom; h != nil {
		hh := *h
		if hh.Attainment == 0 {
			hh.Attainment = 0.95
		}
		if hh.MinLive == 0 {
			hh.MinLive = 5
		}
		c.Headroom = &hh
	}
	return c
}

// mode names what kind of load a config makes.
func (c *Config) mode() string {
	switch {
	case c.Headroom != nil:
		return "headroom"
	case c.Trace != nil:
		return "trace"
	}
	return "synthetic"
}

// base returns the unit-rate arrival process the runner's schedule rescales, and the rate it
// runs at from the config.
func (c *Config) base() (gen.Arrivals, float64, error) {
	if c.Trace != nil {
		a, err := gen.NewTrace(c.Trace, 1)
		return a, c.Speedup, err
	}
	spec := c.Arrival
	rate := spec.Rate
	if c.Headroom != nil {
		rate = c.Headroom.Start
		if spec.Pattern == "" {
			spec.Pattern = gen.PatternPoisson
		}
	}
	spec.Rate = 1
	a, err := spec.New(rand.New(rand.NewPCG(c.Seed, 0x5ad0)))
	return a, rate, err
}

// scheduleKey identifies what a running schedule was built from: a change of it restarts the
// schedule, any other change is applied in place.
func (c *Config) scheduleKey() string {
	var sum time.Duration
	for _, t := range c.Trace {
		sum += t
	}
	return fmt.Sprintf("%s|%s|%v|%d|%d|%d|%d|%v|%v|%v", c.mode(), strings.ToLower(c.Arrival.Pattern), c.Arrival.Smoothness,
		c.Seed, c.MaxInFlight, len(c.Trace), sum, c.Headroom, c.StartAfter, c.Duration)
}
