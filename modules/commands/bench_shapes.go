package commands

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/workload"
)

// shapeFlags are bench's load shapes beyond single requests, with AIPerf's flag names and
// meanings: multi-turn synthetic conversations, the user-centric rate, shared-prefix prompts
// for KV-cache tests, and custom datasets read from a file.
type shapeFlags struct {
	convNum                                   int
	turnMean, turnStddev                      float64
	delayMean, delayStddev, delayRatio        float64
	userRate                                  float64
	users                                     int
	prefixLength, prefixPool                  int
	systemLength, contextLength               int
	inputFile, datasetType, publicDataset     string
	sampling                                  string
	sessionsSet, turnsSet, delaySet, ratioSet bool
	countSet                                  bool
}

func (f *shapeFlags) register(fs *flag.FlagSet) {
	num := "conversations (sessions) to build, sent in turn (default --num-dataset-entries)"
	for _, n := range []string{"conversation-num", "num-conversations", "num-sessions"} {
		fs.IntVar(&f.convNum, n, 0, num)
	}
	for _, n := range []string{"conversation-turn-mean", "session-turns-mean"} {
		fs.Float64Var(&f.turnMean, n, 1, "mean turns per conversation")
	}
	for _, n := range []string{"conversation-turn-stddev", "session-turns-stddev"} {
		fs.Float64Var(&f.turnStddev, n, 0, "standard deviation of turns per conversation")
	}
	for _, n := range []string{"conversation-turn-delay-mean", "session-turn-delay-mean"} {
		fs.Float64Var(&f.delayMean, n, 0, "mean delay between turns, in milliseconds, after the previous response")
	}
	for _, n := range []string{"conversation-turn-delay-stddev", "session-turn-delay-stddev"} {
		fs.Float64Var(&f.delayStddev, n, 0, "standard deviation of the delay between turns, in milliseconds")
	}
	for _, n := range []string{"conversation-turn-delay-ratio", "session-delay-ratio"} {
		fs.Float64Var(&f.delayRatio, n, 1, "factor scaling every turn delay (dataset delays included)")
	}
	fs.Float64Var(&f.userRate, "user-centric-rate", 0, "requests per second of a user-centric run: --num-users users, each sending a turn every num-users/rate seconds")
	fs.IntVar(&f.users, "num-users", 0, "users of a user-centric run")
	for _, n := range []string{"prefix-prompt-length", "prompt-prefix-length"} {
		fs.IntVar(&f.prefixLength, n, 0, "tokens of each prefix prompt, put before each conversation's first prompt")
	}
	for _, n := range []string{"num-prefix-prompts", "prefix-prompt-pool-size", "prompt-prefix-pool-size"} {
		fs.IntVar(&f.prefixPool, n, 0, "prefix prompts to draw from (the pool)")
	}
	fs.IntVar(&f.systemLength, "shared-system-prompt-length", 0, "tokens of a system prompt sent first in every request")
	fs.IntVar(&f.contextLength, "user-context-prompt-length", 0, "tokens of a user context of each conversation's own, sent after the system prompt")
	fs.StringVar(&f.inputFile, "input-file", "", "dataset file (see --custom-dataset-type)")
	fs.StringVar(&f.datasetType, "custom-dataset-type", "", "type of --input-file: "+strings.Join(workload.DatasetTypes[:3], ", "))
	fs.StringVar(&f.publicDataset, "public-dataset", "", "sharegpt: --input-file is a downloaded ShareGPT JSON file")
	fs.StringVar(&f.sampling, "dataset-sampling-strategy", "", "how requests draw the prompts or conversations: sequential, random (with replacement) or shuffle (without, reshuffled each pass); default as in AIPerf: sequential for single_turn and multi_turn files, shuffle otherwise")
}

// visited notes which flags were given, once parsed.
func (f *shapeFlags) visited(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "conversation-num", "num-conversations", "num-sessions":
			f.sessionsSet = true
		case "conversation-turn-mean", "session-turns-mean", "conversation-turn-stddev", "session-turns-stddev":
			f.turnsSet = true
		case "conversation-turn-delay-mean", "session-turn-delay-mean", "conversation-turn-delay-stddev", "session-turn-delay-stddev":
			f.delaySet = true
		case "conversation-turn-delay-ratio", "session-delay-ratio":
			f.ratioSet = true
		case "request-count", "num-requests":
			f.countSet = true
		}
	})
}

// active reports whether a shape was asked for: the run then sends conversations.
func (f *shapeFlags) active() bool {
	return f.sessionsSet || f.turnsSet || f.delaySet || f.userCentric() || f.prefixLength > 0 || f.prefixPool > 0 ||
		f.systemLength > 0 || f.contextLength > 0 || f.inputFile != "" || f.datasetType != "" || f.publicDataset != ""
}

func (f *shapeFlags) userCentric() bool { return f.userRate != 0 || f.users != 0 }

// sampler is the sampler of bench's synthetic prompt pool of n entries (--dataset-sampling-strategy).
func (f *shapeFlags) sampler(n int, seed uint64) (*workload.Sampler, error) {
	return workload.NewSampler(f.sampling, "", n, seed)
}

// mode names the run's artifact folder part for a user-centric run.
func (f *shapeFlags) mode(mode string) string {
	if f.userCentric() {
		return "user_centric_rate" + formatValue(f.userRate)
	}
	return mode
}

// shapeRun is what the shapes need from the rest of bench's flags.
type shapeRun struct {
	r            resolved
	lengths      workload.Lengths
	entries      int
	count        int
	concurrency  int
	rate, warmup bool
}

// apply checks the shapes and, when one is active, makes spec send conversations.
func (f *shapeFlags) apply(spec *loadtest.Spec, in shapeRun) error {
	if !f.active() {
		return nil
	}
	var errs []error
	if spec.Worker.Split() {
		errs = append(errs, errors.New("conversations, datasets and user-centric runs are not split across --worker-count processes"))
	}
	if f.sessionsSet && (f.convNum < 1 || f.convNum > workload.MaxDatasetConversations) {
		errs = append(errs, fmt.Errorf("--conversation-num %d: want 1 to %d", f.convNum, workload.MaxDatasetConversations))
	}
	if f.userCentric() {
		switch {
		case !(f.userRate > 0) || math.IsInf(f.userRate, 0):
			errs = append(errs, fmt.Errorf("--user-centric-rate %v: want a positive number of requests a second", f.userRate))
		case f.users < 1 || f.users > 100000:
			errs = append(errs, fmt.Errorf("--num-users %d: want 1 to 100000 with --user-centric-rate", f.users))
		}
		if in.rate {
			errs = append(errs, errors.New("--user-centric-rate and --request-rate are different modes: give one"))
		}
		if in.warmup {
			errs = append(errs, errors.New("--warmup-request-count is not supported with --user-centric-rate"))
		}
		if in.concurrency > 0 {
			errs = append(errs, errors.New("--concurrency is not supported with --user-centric-rate: its users pace themselves"))
		}
	}
	conv := &workload.ConversationSpec{Lengths: in.lengths, Seed: in.r.seed ^ 0xc0,
		TurnMean: f.turnMean, TurnStddev: f.turnStddev, DelayMean: f.delayMean, DelayStddev: f.delayStddev,
		DelayRatio: f.delayRatio, PrefixPool: f.prefixPool, PrefixLength: f.prefixLength,
		SystemLength: f.systemLength, ContextLength: f.contextLength}
	if err := conv.Validate(); err != nil {
		errs = append(errs, err)
	}
	kind := f.datasetType
	switch {
	case f.publicDataset != "" && f.publicDataset != workload.DatasetShareGPT:
		errs = append(errs, fmt.Errorf("--public-dataset %q: only sharegpt is read (from --input-file)", f.publicDataset))
	case f.publicDataset != "" && kind != "":
		errs = append(errs, errors.New("--public-dataset and --custom-dataset-type cannot be set together (as in AIPerf)"))
	case f.publicDataset != "":
		kind = workload.DatasetShareGPT
	}
	if (kind != "") != (f.inputFile != "") {
		errs = append(errs, errors.New("--input-file needs --custom-dataset-type (or --public-dataset sharegpt), and they need --input-file"))
	}
	if f.inputFile != "" && (f.turnsSet || f.delaySet || f.prefixLength > 0 || f.prefixPool > 0 || f.systemLength > 0 || f.contextLength > 0) {
		errs = append(errs, errors.New("--conversation-turn-*, prefix and system/context prompt flags shape synthetic conversations: not with --input-file"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	load := loadtest.ConversationLoad{Path: in.r.path, Body: in.r.spec, Synthetic: conv, Entries: in.entries,
		Tokens: in.r.tokens, Sampling: f.sampling, Seed: in.r.seed, Count: in.count,
		UserRate: f.userRate, Users: f.users, OpenLoop: in.rate}
	if f.inputFile != "" {
		var err error
		if load.Dataset, err = workload.LoadDataset(f.inputFile, kind, in.r.tokens); err != nil {
			return err
		}
	}
	if f.sessionsSet {
		load.Entries, load.Sessions = f.convNum, f.convNum
		if !f.countSet {
			load.Count = 0 // AIPerf: --conversation-num alone runs that many conversations, whole
		}
	}
	load.ScaleDelays, load.DelayRatio = f.ratioSet, f.delayRatio
	return load.Apply(spec)
}
