package commands

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/bench"
)

// sweepFlags are bench's load shapes over time and over runs, with AIPerf's flag names
// (aiperf/common/config/loadgen_config.py, 2026): ramps, warmup by duration, the request
// timeout, concurrency sweeps, repeated runs with confidence intervals, and timeslices.
type sweepFlags struct {
	conc   concurrencyList
	phases bench.Phases    // ramps, warmup, request timeout, timeslices
	runs   bench.SweepRuns // repeated runs and their cooldowns, the sweep's mode and seeds
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
	fs.IntVar(&s.runs.Runs, "num-profile-runs", 1, "profile runs of the same benchmark (1-10); more than 1 writes aggregate/profile_export_aiperf_aggregate.json and .csv with confidence intervals")
	fs.Float64Var(&s.runs.Confidence, "confidence-level", 0.95, "confidence level of the intervals across profile runs (0-1)")
	fs.Float64Var(&s.runs.RunCooldown, "profile-run-cooldown-seconds", 0, "seconds to wait between profile runs")
	fs.BoolVar(&s.runs.DisableWarmupAfterFirst, "profile-run-disable-warmup-after-first", true, "send the warmup before the first profile run only")
	fs.StringVar(&s.runs.Mode, "parameter-sweep-mode", "repeated", "with a --concurrency list and --num-profile-runs: repeated (the whole sweep N times) or independent (N runs per value)")
	fs.Float64Var(&s.runs.SweepCooldown, "parameter-sweep-cooldown-seconds", 0, "seconds to wait between the values of a sweep")
	fs.BoolVar(&s.runs.SameSeed, "parameter-sweep-same-seed", false, "give every sweep value the same seed (default: seed + value index)")
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
	vals, err := bench.ParseLevels(s)
	if err == nil {
		c.values, c.level = vals, vals[0]
	}
	return err
}

// sweeping reports whether the flags ask for a sweep or for repeated runs.
func (s *sweepFlags) sweeping() bool { return len(s.conc.values) > 1 || s.runs.Runs != 1 }

// run runs the sweep or repeated runs the flags ask for (bench.RunSweep), each run with
// bench (a spec built from b for the cell), and says on stderr where each goes and what each
// aggregate holds.
func (s *sweepFlags) run(ctx context.Context, b *benchFlags, stderr io.Writer, runCell func(context.Context, *bench.SweepCell) (bench.Result, int, error)) (int, error) {
	sw, err := s.sweep(b)
	if err != nil {
		return 2, err
	}
	usage := false
	err = bench.RunSweep(ctx, sw, func(ctx context.Context, c bench.SweepCell) (*aiperf.Export, error) {
		fmt.Fprintf(stderr, "bench: %s → %s\n", c.Label, c.Dir)
		res, code, err := runCell(ctx, &c)
		switch code {
		case 0:
			return &res.Export, nil
		case 2:
			usage = true
			return nil, &bench.StopSweep{Err: err} // the flags are wrong for every run alike
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

// sweep turns the flags into the sweep to run (bench.SweepRuns.Sweep; bench.Sweep.Plan
// says how AIPerf's orchestrator lays the runs out).
func (s *sweepFlags) sweep(b *benchFlags) (bench.Sweep, error) {
	base := b.cf.artifactDir
	if base == "" {
		base = bench.ArtifactDir(b.cf.model, b.cf.endpointType, bench.SweepMode(s.conc.values, b.arr.Rate))
	}
	return s.runs.Sweep(base, s.conc.values, b.cf.seed, b.cf.worker.Count)
}

// registerRequestTimeout defines --request-timeout-seconds on fs (bench and replay alike).
func registerRequestTimeout(fs *flag.FlagSet, v *float64) {
	fs.Float64Var(v, "request-timeout-seconds", bench.DefaultRequestTimeout, "seconds a request may take before it is cancelled and counted as an error (TimeoutError)")
}
