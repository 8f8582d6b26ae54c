package bench

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Shapes are a benchmark's load shapes beyond single requests, with AIPerf's flag names and
// meanings (docs/bench-shapes.md): multi-turn synthetic conversations (Conversations,
// --conversation-num; TurnMean and TurnStddev, --conversation-turn-mean/-stddev; DelayMean,
// DelayStddev and DelayRatio, --conversation-turn-delay-mean/-stddev/-ratio, in ms), the
// user-centric rate (UserRate, --user-centric-rate; Users, --num-users), shared-prefix prompts
// for KV-cache tests (PrefixLength and PrefixPool, --prefix-prompt-length and
// --num-prefix-prompts; SystemLength, --shared-system-prompt-length; ContextLength,
// --user-context-prompt-length), and datasets read from a file (InputFile, --input-file;
// DatasetType, --custom-dataset-type; PublicDataset, --public-dataset; Sampling,
// --dataset-sampling-strategy). The *Set members say which of the flags were given: a given
// flag asks for conversations even at its default.
type Shapes struct {
	Conversations                         int
	TurnMean, TurnStddev                  float64
	DelayMean, DelayStddev, DelayRatio    float64
	UserRate                              float64
	Users                                 int
	PrefixLength, PrefixPool              int
	SystemLength, ContextLength           int
	InputFile, DatasetType, PublicDataset string
	Sampling                              string

	ConversationsSet, TurnsSet, DelaySet, RatioSet bool
	// CountSet says the request count was given (--request-count): without it a
	// conversation count alone runs that many conversations, whole.
	CountSet bool
}

// Active reports whether a shape was asked for: the run then sends conversations.
func (s *Shapes) Active() bool {
	return s.ConversationsSet || s.TurnsSet || s.DelaySet || s.UserCentric() || s.PrefixLength > 0 || s.PrefixPool > 0 ||
		s.SystemLength > 0 || s.ContextLength > 0 || s.InputFile != "" || s.DatasetType != "" || s.PublicDataset != ""
}

// UserCentric reports whether the run is user-centric (--user-centric-rate, --num-users).
func (s *Shapes) UserCentric() bool { return s.UserRate != 0 || s.Users != 0 }

// Apply checks the shapes and, when one is active, makes spec send conversations: load (its
// Path, Body, Tokens, Seed, Entries, Count and OpenLoop set from the rest of the benchmark)
// with the shapes' members, the synthetic conversations of lengths or the dataset file's
// (ConversationLoad.Apply). concurrency and warmup are the benchmark's requests in flight and
// whether it has a warmup request count.
func (s *Shapes) Apply(spec *Spec, load ConversationLoad, lengths workload.Lengths, concurrency int, warmup bool) error {
	if !s.Active() {
		return nil
	}
	var errs []error
	if spec.Worker.Split() {
		errs = append(errs, errors.New("conversations, datasets and user-centric runs are not split across --worker-count processes"))
	}
	if s.ConversationsSet && (s.Conversations < 1 || s.Conversations > workload.MaxDatasetConversations) {
		errs = append(errs, fmt.Errorf("--conversation-num %d: want 1 to %d", s.Conversations, workload.MaxDatasetConversations))
	}
	if s.UserCentric() {
		switch {
		case !(s.UserRate > 0) || math.IsInf(s.UserRate, 0):
			errs = append(errs, fmt.Errorf("--user-centric-rate %v: want a positive number of requests a second", s.UserRate))
		case s.Users < 1 || s.Users > 100000:
			errs = append(errs, fmt.Errorf("--num-users %d: want 1 to 100000 with --user-centric-rate", s.Users))
		}
		if load.OpenLoop {
			errs = append(errs, errors.New("--user-centric-rate and --request-rate are different modes: give one"))
		}
		if warmup {
			errs = append(errs, errors.New("--warmup-request-count is not supported with --user-centric-rate"))
		}
		if concurrency > 0 {
			errs = append(errs, errors.New("--concurrency is not supported with --user-centric-rate: its users pace themselves"))
		}
	}
	conv := &workload.ConversationSpec{Lengths: lengths, Seed: load.Seed ^ 0xc0,
		TurnMean: s.TurnMean, TurnStddev: s.TurnStddev, DelayMean: s.DelayMean, DelayStddev: s.DelayStddev,
		DelayRatio: s.DelayRatio, PrefixPool: s.PrefixPool, PrefixLength: s.PrefixLength,
		SystemLength: s.SystemLength, ContextLength: s.ContextLength}
	if err := conv.Validate(); err != nil {
		errs = append(errs, err)
	}
	kind := s.DatasetType
	switch {
	case s.PublicDataset != "" && s.PublicDataset != workload.DatasetShareGPT:
		errs = append(errs, fmt.Errorf("--public-dataset %q: only sharegpt is read (from --input-file)", s.PublicDataset))
	case s.PublicDataset != "" && kind != "":
		errs = append(errs, errors.New("--public-dataset and --custom-dataset-type cannot be set together (as in AIPerf)"))
	case s.PublicDataset != "":
		kind = workload.DatasetShareGPT
	}
	if (kind != "") != (s.InputFile != "") {
		errs = append(errs, errors.New("--input-file needs --custom-dataset-type (or --public-dataset sharegpt), and they need --input-file"))
	}
	if s.InputFile != "" && (s.TurnsSet || s.DelaySet || s.PrefixLength > 0 || s.PrefixPool > 0 || s.SystemLength > 0 || s.ContextLength > 0) {
		errs = append(errs, errors.New("--conversation-turn-*, prefix and system/context prompt flags shape synthetic conversations: not with --input-file"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	load.Synthetic, load.Sampling, load.UserRate, load.Users = conv, s.Sampling, s.UserRate, s.Users
	if s.InputFile != "" {
		var err error
		if load.Dataset, err = workload.LoadDataset(s.InputFile, kind, load.Tokens); err != nil {
			return err
		}
	}
	if s.ConversationsSet {
		load.Entries, load.Sessions = s.Conversations, s.Conversations
		if !s.CountSet {
			load.Count = 0 // AIPerf: --conversation-num alone runs that many conversations, whole
		}
	}
	load.ScaleDelays, load.DelayRatio = s.RatioSet, s.DelayRatio
	return load.Apply(spec)
}

// Mode names a benchmark run's part of its artifact folder (ArtifactDir), as AIPerf does:
// concurrency<N>, request_rate<R> or request_rate<R>-concurrency<N> with a rate (rate > 0),
// user_centric_rate<R> for a user-centric run.
func (s *Shapes) Mode(concurrency int, rate float64) string {
	switch {
	case s.UserCentric():
		return "user_centric_rate" + FormatValue(s.UserRate)
	case rate == 0:
		return "concurrency" + strconv.Itoa(concurrency)
	case concurrency > 0:
		return "request_rate" + FormatValue(rate) + "-concurrency" + strconv.Itoa(concurrency)
	}
	return "request_rate" + FormatValue(rate)
}

// FormatValue writes a flag value for a folder name: 10, 2.5.
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Prompts builds a benchmark's synthetic request bodies before the run (workload.Synthetic):
// entries of them (--num-dataset-entries), or count when fewer requests are sent (count > 0),
// with prompts sized in tok's tokens (nil: o200k_base), and the longest body's size
// (Spec.MaxBody).
func Prompts(tok tokens.Counter, lengths workload.Lengths, body workload.BodySpec, seed uint64, entries, count int) (pool [][]byte, maxBody int, err error) {
	corpus, err := workload.CorpusFor(tok)
	if err != nil {
		return nil, 0, err
	}
	n := entries
	if count > 0 {
		n = min(entries, count)
	}
	syn := &workload.Synthetic{Corpus: corpus, Lengths: lengths, Spec: body, Seed: seed}
	if pool, err = syn.Bodies(n); err != nil {
		return nil, 0, err
	}
	for _, b := range pool {
		maxBody = max(maxBody, len(b))
	}
	return pool, maxBody, nil
}
