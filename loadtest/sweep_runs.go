package loadtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/internal/limits"
)

// ParseLevels parses AIPerf's --concurrency: one value (any integer up to
// limits.MaxConcurrency: the benchmark checks it), or a comma-separated sweep of at least two
// distinct positive values (AIPerf's parse_concurrency_list and validate_concurrency_list).
func ParseLevels(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	vals := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", p)
		}
		if len(parts) > 1 && v < 1 {
			return nil, fmt.Errorf("sweep value %d: every value must be at least 1", v)
		}
		if v > limits.MaxConcurrency {
			return nil, fmt.Errorf("%d: over the limit of %d requests in flight (limits.MaxConcurrency)", v, limits.MaxConcurrency)
		}
		if slices.Contains(vals[:i], v) {
			return nil, fmt.Errorf("sweep value %d is repeated: its runs would overwrite each other (use --num-profile-runs for repeats)", v)
		}
		vals[i] = v
	}
	return vals, nil
}

// SweepRuns are a sweep's and repeated runs' settings as AIPerf's flags give them
// (aiperf/common/config/loadgen_config.py, 2026): Runs (--num-profile-runs), Confidence
// (--confidence-level), RunCooldown and SweepCooldown in seconds
// (--profile-run-cooldown-seconds, --parameter-sweep-cooldown-seconds),
// DisableWarmupAfterFirst (--profile-run-disable-warmup-after-first), Mode, repeated or
// independent (--parameter-sweep-mode), and SameSeed (--parameter-sweep-same-seed).
type SweepRuns struct {
	Runs                              int
	Confidence                        float64
	RunCooldown, SweepCooldown        float64
	DisableWarmupAfterFirst, SameSeed bool
	Mode                              string
}

// Sweep checks the settings and returns the sweep of levels (the --concurrency values) under
// base, from seed: a value's seed is seed plus its index, unless SameSeed; only the first run of
// each value has the warmup, unless DisableWarmupAfterFirst is false. workers is the number of
// worker processes: a sweep runs in one.
func (r SweepRuns) Sweep(base string, levels []int, seed uint64, workers int) (Sweep, error) {
	var errs []error
	if r.Runs < 1 || r.Runs > MaxProfileRuns {
		errs = append(errs, fmt.Errorf("--num-profile-runs %d: want 1 to %d", r.Runs, MaxProfileRuns))
	}
	if !(r.Confidence > 0 && r.Confidence < 1) {
		errs = append(errs, fmt.Errorf("--confidence-level %v: want a level between 0 and 1, such as 0.95", r.Confidence))
	}
	if r.Mode != "repeated" && r.Mode != "independent" {
		errs = append(errs, fmt.Errorf("--parameter-sweep-mode %q: want repeated or independent", r.Mode))
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"--profile-run-cooldown-seconds", r.RunCooldown}, {"--parameter-sweep-cooldown-seconds", r.SweepCooldown}} {
		if !(c.v >= 0) || math.IsInf(c.v, 0) {
			errs = append(errs, fmt.Errorf("%s %v: want seconds ≥ 0", c.name, c.v))
		}
	}
	if workers > 1 {
		errs = append(errs, errors.New("sweeps and --num-profile-runs run in one process: --worker-count is not supported with them"))
	}
	if len(errs) > 0 {
		return Sweep{}, errors.Join(errs...)
	}
	return Sweep{Base: base, Levels: levels, Runs: r.Runs, Independent: r.Mode == "independent",
		Seed: seed, SameSeed: r.SameSeed, WarmupAfterFirst: !r.DisableWarmupAfterFirst,
		RunCooldown: Seconds(r.RunCooldown), SweepCooldown: Seconds(r.SweepCooldown), Confidence: r.Confidence}, nil
}

// SweepMode names a sweep's part of its base folder (ArtifactDir): concurrency<N> for one
// level, concurrency_sweep for several, behind request_rate<R>- with a rate (rate > 0), or
// request_rate<R> alone when no level is given.
func SweepMode(levels []int, rate float64) string {
	mode := "concurrency0"
	switch {
	case len(levels) > 1:
		mode = "concurrency_sweep"
	case len(levels) == 1:
		mode = "concurrency" + strconv.Itoa(levels[0])
	}
	switch {
	case rate > 0 && len(levels) > 0 && levels[0] > 0:
		return "request_rate" + FormatValue(rate) + "-" + mode
	case rate > 0:
		return "request_rate" + FormatValue(rate)
	}
	return mode
}
