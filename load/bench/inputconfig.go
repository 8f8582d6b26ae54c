package bench

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/workload"
)

// CommandLine is a parsed bench or replay command line, what run_info and input_config describe
// (NewRunInfo): the command as typed, every flag's value by its name (llmtap's flags have
// AIPerf's names; secrets such as --api-key and --header are left out) and the flags given.
type CommandLine struct {
	Command string
	Values  map[string]string
	Given   map[string]bool
}

func (c CommandLine) str(name string) string { return c.Values[name] }

func (c CommandLine) num(name string) float64 {
	v, _ := strconv.ParseFloat(c.Values[name], 64)
	return v
}

// given reports whether any of the flags was given.
func (c CommandLine) given(names ...string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return c.Given[n] })
}

// ForCell returns the command line of a sweep cell's run: the cell's concurrency, seed, folder
// and warmup in place of the flags'.
func (c CommandLine) ForCell(cell SweepCell) CommandLine {
	v := maps.Clone(c.Values)
	if v == nil {
		v = map[string]string{}
	}
	v["random-seed"], v["artifact-dir"] = strconv.FormatUint(cell.Seed, 10), cell.Dir
	if cell.Level > 0 {
		v["concurrency"] = strconv.Itoa(cell.Level)
	}
	if cell.NoWarmup {
		v["warmup-request-count"], v["warmup-duration"] = "0", "0"
	}
	c.Values = v
	return c
}

// NewRunInfo describes a run of the command line c: run_info (its seed, mode and every flag)
// and AIPerf's input_config, the members AIPerf's flags of the same names fill, with the run's
// artifact folder dir.
func NewRunInfo(c CommandLine, mode, dir string, seed uint64) aiperf.RunInfo {
	flags := make(map[string]any, len(c.Values))
	for k, v := range c.Values {
		flags[k] = v
	}
	info := aiperf.RunInfo{Seed: seed, CLICommand: c.Command, Mode: mode, Flags: flags}
	str, num := c.str, c.num
	in := &info.Input
	in.Endpoint.ModelNames = []string{str("model")}
	switch t := str("endpoint-type"); t {
	case workload.EndpointChat, workload.EndpointCompletions:
		in.Endpoint.Type = t
	}
	in.Endpoint.Streaming = str("streaming") == "true"
	in.Endpoint.URL = str("url")
	in.Input.RandomSeed = seed
	if c := int(num("concurrency")); c > 0 {
		in.Loadgen.Concurrency = &c
		in.Loadgen.RequestRateMode = "concurrency_burst"
	}
	if r := num("request-rate"); r > 0 {
		in.Loadgen.RequestRate = &r
		in.Loadgen.RequestRateMode = ""
		if p := str("arrival-pattern"); p == "constant" || p == "poisson" {
			in.Loadgen.RequestRateMode = p
		}
	}
	if d := num("benchmark-duration"); d >= 1 {
		in.Loadgen.BenchmarkDuration = &d
		g := num("benchmark-grace-period")
		if math.IsInf(g, 0) || math.IsNaN(g) {
			g = math.MaxFloat64 // JSON has no infinity
		}
		in.Loadgen.BenchmarkGracePeriod = &g
	} else if n := int(num("request-count")); n > 0 {
		in.Loadgen.RequestCount = &n
	}
	in.Loadgen.WarmupRequestCount = int(num("warmup-request-count"))
	in.Loadgen.RequestCancellationRate = num("request-cancellation-rate")
	in.Loadgen.RequestCancellationDelay = num("request-cancellation-delay")
	in.Output.ArtifactDirectory = dir
	in.CLICommand = c.Command
	if t := str("tokenizer"); t != "" {
		in.Tokenizer = &aiperf.TokenizerConfig{Name: t}
	}
	shapeInput(in, c)
	return info
}

// positive returns &v for v > 0 (AIPerf's ge=1 or gt=0 members), nil otherwise.
func positive[T int | float64](v T) *T {
	if v > 0 {
		return &v
	}
	return nil
}

// wholeCount returns v as an int when it is a whole number ≥ min (AIPerf's integer members),
// nil otherwise.
func wholeCount(v float64, min int) *int {
	if v != math.Trunc(v) || v < float64(min) || v > math.MaxInt32 {
		return nil
	}
	n := int(v)
	return &n
}

// shapeInput fills the members of AIPerf's input_config for bench's conversations, prefixes,
// datasets, user-centric rate, ramps, warmup and repeated runs from the parsed flags
// (aiperf.InputSection and aiperf.LoadgenShapes say which members and why some are left out).
func shapeInput(in *aiperf.InputConfig, r CommandLine) {
	kind := r.str("custom-dataset-type")
	if r.str("public-dataset") != "" {
		in.Input.PublicDataset = r.str("public-dataset")
		kind = workload.DatasetShareGPT
	}
	if f := r.str("input-file"); f != "" {
		in.Input.File, in.Input.CustomDatasetType = f, r.str("custom-dataset-type")
	}
	if s := r.str("dataset-sampling-strategy"); s != "" {
		in.Input.DatasetSamplingStrategy = s
	} else if _, ok := r.Values["dataset-sampling-strategy"]; ok {
		in.Input.DatasetSamplingStrategy = workload.PreferredSampling(kind)
	}
	pool, length := int(r.num("num-prefix-prompts")), int(r.num("prefix-prompt-length"))
	system, context := int(r.num("shared-system-prompt-length")), int(r.num("user-context-prompt-length"))
	if pool > 0 || length > 0 || system > 0 || context > 0 {
		p := &aiperf.PromptConfig{}
		p.PrefixPrompt.PoolSize, p.PrefixPrompt.Length = pool, length
		if pool == 0 && length == 0 { // AIPerf: not beside a prefix pool
			p.PrefixPrompt.SharedSystemPromptLength, p.PrefixPrompt.UserContextPromptLength = positive(system), positive(context)
		}
		in.Input.Prompt = p
	}
	if r.given("conversation-num", "num-conversations", "num-sessions", "conversation-turn-mean", "session-turns-mean",
		"conversation-turn-stddev", "session-turns-stddev", "conversation-turn-delay-mean", "session-turn-delay-mean",
		"conversation-turn-delay-stddev", "session-turn-delay-stddev", "conversation-turn-delay-ratio", "session-delay-ratio") {
		c := &aiperf.Conversation{}
		if r.given("conversation-num", "num-conversations", "num-sessions") {
			c.Num = positive(int(r.num("conversation-num")))
		}
		c.Turn.Mean, c.Turn.Stddev = wholeCount(r.num("conversation-turn-mean"), 1), wholeCount(r.num("conversation-turn-stddev"), 0)
		c.Turn.Delay.Mean, c.Turn.Delay.Stddev, c.Turn.Delay.Ratio = r.num("conversation-turn-delay-mean"), r.num("conversation-turn-delay-stddev"), r.num("conversation-turn-delay-ratio")
		in.Input.Conversation = c
	}
	lg := &in.Loadgen.LoadgenShapes
	lg.UserCentricRate, lg.NumUsers = positive(r.num("user-centric-rate")), positive(int(r.num("num-users")))
	lg.ConcurrencyRampDuration, lg.RequestRateRampDuration = positive(r.num("concurrency-ramp-duration")), positive(r.num("request-rate-ramp-duration"))
	lg.WarmupDuration, lg.WarmupConcurrency = positive(r.num("warmup-duration")), positive(int(r.num("warmup-concurrency")))
	lg.WarmupRequestRate = positive(r.num("warmup-request-rate"))
	lg.WarmupConcurrencyRampDuration = positive(r.num("warmup-concurrency-ramp-duration"))
	lg.WarmupRequestRateRampDuration = positive(r.num("warmup-request-rate-ramp-duration"))
	if runs := int(r.num("num-profile-runs")); runs > 1 {
		lg.NumProfileRuns = &runs
		lg.ConfidenceLevel = positive(r.num("confidence-level"))
		cool := r.num("profile-run-cooldown-seconds")
		lg.ProfileRunCooldownSeconds = &cool
		noWarmup := r.str("profile-run-disable-warmup-after-first") == "true"
		lg.ProfileRunDisableWarmupAfterFirst = &noWarmup
	}
	if t := r.num("request-timeout-seconds"); t > 0 && t != DefaultRequestTimeout {
		in.Endpoint.TimeoutSeconds = t
	}
}
