package commands

import (
	"flag"
	"math"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/workload"
)

// flagReader reads a parsed flag set's values by name, with a sweep cell's values (over) in
// place of the command line's; a flag the command does not have reads as "" (0, unset).
type flagReader struct {
	fs   *flag.FlagSet
	set  map[string]bool   // the flags given
	over map[string]string // values that replace the flags' (cellFlags)
}

func newFlagReader(fs *flag.FlagSet, over map[string]string) flagReader {
	r := flagReader{fs: fs, set: map[string]bool{}, over: over}
	fs.Visit(func(f *flag.Flag) { r.set[f.Name] = true })
	return r
}

func (r flagReader) str(name string) string {
	if v, ok := r.over[name]; ok {
		return v
	}
	if f := r.fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func (r flagReader) num(name string) float64 { v, _ := strconv.ParseFloat(r.str(name), 64); return v }

// values returns every flag's value, for the export's run_info.flags; secrets (--api-key,
// --header) stay out of the exports.
func (r flagReader) values() map[string]any {
	m := map[string]any{}
	r.fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "api-key" || strings.EqualFold(f.Name, "H") || f.Name == "header" {
			return
		}
		m[f.Name] = r.str(f.Name)
	})
	return m
}

// given reports whether any of the flags was given.
func (r flagReader) given(names ...string) bool {
	for _, n := range names {
		if r.set[n] {
			return true
		}
	}
	return false
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
// (loadtest.InputSection and LoadgenShapes say which members and why some are left out).
func shapeInput(in *loadtest.InputConfig, r flagReader) {
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
	} else if r.fs.Lookup("dataset-sampling-strategy") != nil {
		in.Input.DatasetSamplingStrategy = workload.PreferredSampling(kind)
	}
	pool, length := int(r.num("num-prefix-prompts")), int(r.num("prefix-prompt-length"))
	system, context := int(r.num("shared-system-prompt-length")), int(r.num("user-context-prompt-length"))
	if pool > 0 || length > 0 || system > 0 || context > 0 {
		p := &loadtest.PromptConfig{}
		p.PrefixPrompt.PoolSize, p.PrefixPrompt.Length = pool, length
		if pool == 0 && length == 0 { // AIPerf: not beside a prefix pool
			p.PrefixPrompt.SharedSystemPromptLength, p.PrefixPrompt.UserContextPromptLength = positive(system), positive(context)
		}
		in.Input.Prompt = p
	}
	if r.given("conversation-num", "num-conversations", "num-sessions", "conversation-turn-mean", "session-turns-mean",
		"conversation-turn-stddev", "session-turns-stddev", "conversation-turn-delay-mean", "session-turn-delay-mean",
		"conversation-turn-delay-stddev", "session-turn-delay-stddev", "conversation-turn-delay-ratio", "session-delay-ratio") {
		c := &loadtest.Conversation{}
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
	if t := r.num("request-timeout-seconds"); t > 0 && t != loadtest.DefaultRequestTimeout {
		in.Endpoint.TimeoutSeconds = t
	}
}
