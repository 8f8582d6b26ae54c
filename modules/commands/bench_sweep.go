package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/loadtest"

	"github.com/llmtap/llmtap/internal/limits"
)

// sweepFlags are bench's load shapes over time and over runs, with AIPerf's flag names
// (aiperf/common/config/loadgen_config.py, 2026): ramps, warmup by duration, the request
// timeout, concurrency sweeps, repeated runs with confidence intervals, and timeslices.
type sweepFlags struct {
	conc   concurrencyList
	phases loadtest.Phases // ramps, warmup, request timeout, timeslices

	runs                              int
	confidence                        float64
	runCooldown, sweepCooldown        float64
	disableWarmupAfterFirst, sameSeed bool
	sweepMode                         string
}

// register defines the flags on fs and returns the concurrency of the run (the first value of
// a sweep, which each level's run replaces).
func (s *sweepFlags) register(fs *flag.FlagSet) *int {
	fs.Var(&s.conc, "concurrency", "requests in flight: closed loop alone, a ceiling with --request-rate; a comma-separated list (1,4,16) runs one benchmark per value")
	fs.Float64Var(&s.phases.RateRamp, "request-rate-ramp-duration", 0, "seconds over which the request rate rises from rate×0.1/duration to --request-rate, in 0.1 s steps")
	fs.Float64Var(&s.phases.ConcurrencyRamp, "concurrency-ramp-duration", 0, "seconds over which concurrency rises from 1 to --concurrency, one slot at even intervals")
	fs.Float64Var(&s.phases.WarmupDuration, "warmup-duration", 0, "seconds of warmup before the profiling phase, excluded from the results")
	fs.IntVar(&s.phases.WarmupConcurrency, "warmup-concurrency", 0, "concurrency of the warmup (default --concurrency)")
	fs.Float64Var(&s.phases.WarmupRate, "warmup-request-rate", 0, "request rate of the warmup (default --request-rate)")
	fs.StringVar(&s.phases.WarmupPattern, "warmup-arrival-pattern", "", "arrival pattern of the warmup (default --arrival-pattern)")
	fs.Float64Var(&s.phases.WarmupRateRamp, "warmup-request-rate-ramp-duration", 0, "rate ramp of the warmup (default --request-rate-ramp-duration)")
	fs.Float64Var(&s.phases.WarmupConcurrencyRamp, "warmup-concurrency-ramp-duration", 0, "concurrency ramp of the warmup (default --concurrency-ramp-duration)")
	registerRequestTimeout(fs, &s.phases.Timeout)
	fs.Float64Var(&s.phases.SliceDuration, "slice-duration", 0, "seconds per timeslice: also write profile_export_aiperf_timeslices.json and .csv")
	fs.IntVar(&s.runs, "num-profile-runs", 1, "profile runs of the same benchmark (1-10); more than 1 writes aggregate/profile_export_aiperf_aggregate.json and .csv with confidence intervals")
	fs.Float64Var(&s.confidence, "confidence-level", 0.95, "confidence level of the intervals across profile runs (0-1)")
	fs.Float64Var(&s.runCooldown, "profile-run-cooldown-seconds", 0, "seconds to wait between profile runs")
	fs.BoolVar(&s.disableWarmupAfterFirst, "profile-run-disable-warmup-after-first", true, "send the warmup before the first profile run only")
	fs.StringVar(&s.sweepMode, "parameter-sweep-mode", "repeated", "with a --concurrency list and --num-profile-runs: repeated (the whole sweep N times) or independent (N runs per value)")
	fs.Float64Var(&s.sweepCooldown, "parameter-sweep-cooldown-seconds", 0, "seconds to wait between the values of a sweep")
	fs.BoolVar(&s.sameSeed, "parameter-sweep-same-seed", false, "give every sweep value the same seed (default: seed + value index)")
	return &s.conc.level
}

// concurrencyList is --concurrency: one value (any integer: bench validates it), or a
// comma-separated sweep of at least two distinct positive values (AIPerf's
// parse_concurrency_list and validate_concurrency_list).
type concurrencyList struct {
	values []int
	level  int
}

func (c *concurrencyList) String() string {
	if len(c.values) == 0 {
		return strconv.Itoa(c.level)
	}
	s := make([]string, len(c.values))
	for i, v := range c.values {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (c *concurrencyList) Set(s string) error {
	parts := strings.Split(s, ",")
	vals := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%q is not an integer", p)
		}
		if len(parts) > 1 && v < 1 {
			return fmt.Errorf("sweep value %d: every value must be at least 1", v)
		}
		if v > limits.MaxConcurrency {
			return fmt.Errorf("%d: over the limit of %d requests in flight (limits.MaxConcurrency)", v, limits.MaxConcurrency)
		}
		if slices.Contains(vals[:i], v) {
			return fmt.Errorf("sweep value %d is repeated: its runs would overwrite each other (use --num-profile-runs for repeats)", v)
		}
		vals[i] = v
	}
	c.values, c.level = vals, vals[0]
	return nil
}

// sweeping reports whether the flags ask for a sweep or for repeated runs.
func (s *sweepFlags) sweeping() bool { return len(s.conc.values) > 1 || s.runs != 1 }

// run runs the sweep or repeated runs the flags ask for (loadtest.RunSweep), each run with
// bench (a spec built from b for the cell), and says on stderr where each goes and what each
// aggregate holds.
func (s *sweepFlags) run(ctx context.Context, b *benchFlags, stderr io.Writer, bench func(context.Context, *loadtest.SweepCell) (loadtest.Result, int, error)) (int, error) {
	sw, err := s.sweep(b)
	if err != nil {
		return 2, err
	}
	usage := false
	err = loadtest.RunSweep(ctx, sw, func(ctx context.Context, c loadtest.SweepCell) (*loadtest.Export, error) {
		fmt.Fprintf(stderr, "bench: %s → %s\n", c.Label, c.Dir)
		res, code, err := bench(ctx, &c)
		switch code {
		case 0:
			return &res.Export, nil
		case 2:
			usage = true
			return nil, &loadtest.StopSweep{Err: err} // the flags are wrong for every run alike
		}
		return nil, fmt.Errorf("exit %d: %v", code, err)
	}, func(note string) { fmt.Fprintln(stderr, "bench: "+note) })
	switch {
	case usage:
		return 2, err
	case err != nil:
		return 1, err
	}
	return 0, nil
}

// sweep turns the flags into the sweep to run (loadtest.Sweep.Plan says how AIPerf's
// orchestrator lays the runs out): a sweep value's seed is the seed plus its index, unless
// --parameter-sweep-same-seed; only the first run of each value has the warmup, unless
// --profile-run-disable-warmup-after-first=false.
func (s *sweepFlags) sweep(b *benchFlags) (loadtest.Sweep, error) {
	var errs []error
	if s.runs < 1 || s.runs > loadtest.MaxProfileRuns {
		errs = append(errs, fmt.Errorf("--num-profile-runs %d: want 1 to %d", s.runs, loadtest.MaxProfileRuns))
	}
	if !(s.confidence > 0 && s.confidence < 1) {
		errs = append(errs, fmt.Errorf("--confidence-level %v: want a level between 0 and 1, such as 0.95", s.confidence))
	}
	if s.sweepMode != "repeated" && s.sweepMode != "independent" {
		errs = append(errs, fmt.Errorf("--parameter-sweep-mode %q: want repeated or independent", s.sweepMode))
	}
	for name, v := range map[string]float64{"--profile-run-cooldown-seconds": s.runCooldown, "--parameter-sweep-cooldown-seconds": s.sweepCooldown} {
		if !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s %v: want seconds ≥ 0", name, v))
		}
	}
	if b.cf.worker.Count > 1 {
		errs = append(errs, errors.New("sweeps and --num-profile-runs run in one process: --worker-count is not supported with them"))
	}
	if len(errs) > 0 {
		return loadtest.Sweep{}, errors.Join(errs...)
	}
	base := b.cf.artifactDir
	if base == "" {
		mode := "concurrency" + s.conc.String()
		if len(s.conc.values) > 1 {
			mode = "concurrency_sweep"
		}
		if r := b.arr.Rate; r > 0 {
			if s.conc.level > 0 {
				mode = "request_rate" + loadtest.FormatValue(r) + "-" + mode
			} else {
				mode = "request_rate" + loadtest.FormatValue(r)
			}
		}
		base = loadtest.ArtifactDir(b.cf.model, b.cf.endpointType, mode)
	}
	return loadtest.Sweep{Base: base, Levels: s.conc.values, Runs: s.runs, Independent: s.sweepMode == "independent",
		Seed: b.cf.seed, SameSeed: s.sameSeed, WarmupAfterFirst: !s.disableWarmupAfterFirst,
		RunCooldown: loadtest.Seconds(s.runCooldown), SweepCooldown: loadtest.Seconds(s.sweepCooldown), Confidence: s.confidence}, nil
}

// registerRequestTimeout defines --request-timeout-seconds on fs (bench and replay alike).
func registerRequestTimeout(fs *flag.FlagSet, v *float64) {
	fs.Float64Var(v, "request-timeout-seconds", loadtest.DefaultRequestTimeout, "seconds a request may take before it is cancelled and counted as an error (TimeoutError)")
}
