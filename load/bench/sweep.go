package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/limits"
)

// MaxProfileRuns is AIPerf's bound on the profile runs of one benchmark (--num-profile-runs).
const MaxProfileRuns = 10

// Sweep is a concurrency sweep, repeated profile runs of one benchmark, or both (AIPerf's
// --concurrency 1,4,16 and --num-profile-runs), laid out in folders as AIPerf's orchestrator
// lays them out (ParameterSweepStrategy, FixedTrialsStrategy).
type Sweep struct {
	// Base is the folder every run's artifact folder and every aggregate goes under.
	Base string
	// Levels are the concurrency values swept, at least two; none runs the benchmark as it is,
	// Runs times.
	Levels []int
	// Runs is the number of profile runs, 1 to MaxProfileRuns. More than one writes the
	// confidence statistics of the runs into an aggregate folder.
	Runs int
	// Independent runs each value's Runs runs one after another (AIPerf's independent mode);
	// false runs the whole sweep Runs times (repeated mode).
	Independent bool
	// Seed is the first value's seed; each next value's is one more, unless SameSeed. The runs of
	// one value share its seed.
	Seed     uint64
	SameSeed bool
	// WarmupAfterFirst keeps the warmup in every run; false sends it before the first run of
	// each value only.
	WarmupAfterFirst bool
	// RunCooldown is the pause between profile runs, SweepCooldown between the values of one run.
	RunCooldown, SweepCooldown time.Duration
	// Confidence is the level of the intervals across runs, in (0, 1).
	Confidence float64
}

// SweepCell is one run of a sweep: what it changes in the benchmark, and where it goes.
type SweepCell struct {
	// Level is the run's concurrency; 0: the benchmark's own.
	Level int
	// Seed is the run's random seed.
	Seed uint64
	// Dir is the run's artifact folder.
	Dir string
	// NoWarmup leaves out the benchmark's warmup.
	NoWarmup bool
	// Label names the run for a person: concurrency_4, run_0002, run_0001 concurrency_4.
	Label string
	// Run is the profile run (from 0) and RunLabel its name (run_0001).
	Run      int
	RunLabel string
	// AggDir is where the aggregate of the run's value goes; empty: none (one run).
	AggDir string
}

// Plan lays out the runs: a sweep alone runs <Base>/concurrency_<v>/ for each value; repeated
// runs alone run <Base>/profile_runs/run_<NNNN>/ with the aggregate in <Base>/aggregate/; both
// together, in repeated mode, run the whole sweep Runs times as
// <Base>/profile_runs/run_<NNNN>/concurrency_<v>/ (each value's aggregate in
// <Base>/aggregate/concurrency_<v>/, llmtap's choice), and in independent mode run each value
// Runs times as <Base>/concurrency_<v>/profile_runs/run_<NNNN>/ (aggregate in
// <Base>/concurrency_<v>/aggregate/).
func (s Sweep) Plan() []SweepCell {
	levels := s.Levels
	if len(levels) < 2 {
		levels = []int{0}
	}
	var cells []SweepCell
	add := func(run, li int) {
		c := SweepCell{Run: run, RunLabel: fmt.Sprintf("run_%04d", run+1), Level: levels[li], Seed: s.Seed}
		if c.Level > 0 && !s.SameSeed {
			c.Seed = s.Seed + uint64(li)
		}
		c.NoWarmup = run > 0 && !s.WarmupAfterFirst
		value := "concurrency_" + strconv.Itoa(c.Level)
		switch {
		case c.Level == 0: // repeated runs only
			c.Dir = filepath.Join(s.Base, "profile_runs", c.RunLabel)
			c.AggDir, c.Label = filepath.Join(s.Base, "aggregate"), c.RunLabel
		case s.Runs <= 1: // sweep only
			c.Dir, c.Label = filepath.Join(s.Base, value), value
		case s.Independent:
			c.Dir = filepath.Join(s.Base, value, "profile_runs", c.RunLabel)
			c.AggDir, c.Label = filepath.Join(s.Base, value, "aggregate"), value+" "+c.RunLabel
		default:
			c.Dir = filepath.Join(s.Base, "profile_runs", c.RunLabel, value)
			c.AggDir, c.Label = filepath.Join(s.Base, "aggregate", value), c.RunLabel+" "+value
		}
		cells = append(cells, c)
	}
	runs := max(s.Runs, 1)
	if s.Independent {
		for li := range levels {
			for run := range runs {
				add(run, li)
			}
		}
	} else {
		for run := range runs {
			for li := range levels {
				add(run, li)
			}
		}
	}
	return cells
}

// StopSweep, returned by a run of RunSweep, ends the sweep at once with Err: the run could not
// start, and no other would (a spec that is wrong for every run alike).
type StopSweep struct{ Err error }

func (e *StopSweep) Error() string { return e.Err.Error() }
func (e *StopSweep) Unwrap() error { return e.Err }

// RunSweep runs the cells of sw's plan in order, pausing the cooldowns between them; run runs
// one cell and returns its export (or why it failed: the cell counts as a failed run). Then it
// aggregates the runs in memory and writes each value's aggregate (WriteAggregate) and, for a
// sweep, the sweep aggregate in <Base>/sweep_aggregate (WriteSweepAggregate). note, when set,
// is told what each aggregate holds. A failed run makes the error, once the others are done.
func RunSweep(ctx context.Context, sw Sweep, run func(context.Context, SweepCell) (*aiperf.Export, error), note func(string)) error {
	if note == nil {
		note = func(string) {}
	}
	cells := sw.Plan()
	var failed []string
	outcomes := map[string][]aiperf.RunOutcome{} // aggregate folder → its runs
	var order []string
	var byValue []aiperf.SweepValue // a sweep's runs by value, for its sweep aggregate
	for i, c := range cells {
		if i > 0 {
			pause := sw.RunCooldown
			if c.Run == cells[i-1].Run {
				pause = sw.SweepCooldown
			}
			if err := Sleep(ctx, pause); err != nil {
				break
			}
		}
		e, err := run(ctx, c)
		if stop := (*StopSweep)(nil); errors.As(err, &stop) {
			return stop.Err
		}
		out := aiperf.RunOutcome{Label: c.RunLabel, Export: e}
		if err != nil {
			out.Err = err.Error()
			failed = append(failed, c.Label+": "+out.Err)
		}
		if c.AggDir != "" {
			if _, ok := outcomes[c.AggDir]; !ok {
				order = append(order, c.AggDir)
			}
			outcomes[c.AggDir] = append(outcomes[c.AggDir], out)
		}
		if c.Level > 0 {
			i := slices.IndexFunc(byValue, func(v aiperf.SweepValue) bool { return v.Concurrency == c.Level })
			if i < 0 {
				i = len(byValue)
				byValue = append(byValue, aiperf.SweepValue{Concurrency: c.Level})
			}
			byValue[i].Runs = append(byValue[i].Runs, out)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, dir := range order {
		a, err := aiperf.AggregateRuns(outcomes[dir], sw.Confidence)
		if err != nil {
			failed = append(failed, dir+": "+err.Error())
			continue
		}
		files, err := aiperf.WriteAggregate(dir, a)
		if err != nil {
			return err
		}
		note(fmt.Sprintf("%d of %d runs aggregated at confidence %g: %s\n%s", len(a.Successful), a.Runs, sw.Confidence, strings.Join(files, ", "), a.Table()))
	}
	if len(byValue) > 0 {
		files, err := aiperf.WriteSweepAggregate(filepath.Join(sw.Base, "sweep_aggregate"), byValue, sw.Confidence)
		if err != nil {
			return err
		}
		note(fmt.Sprintf("sweep of %d values aggregated: %s", len(byValue), strings.Join(files, ", ")))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s", len(failed), len(cells), strings.Join(failed, "; "))
	}
	return nil
}

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
