package commands

import (
	"flag"
	"strings"

	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/workload"
)

// shapeFlags are bench's load shapes beyond single requests (bench.Shapes), with AIPerf's
// flag names.
type shapeFlags struct{ bench.Shapes }

func (f *shapeFlags) register(fs *flag.FlagSet) {
	num := "conversations (sessions) to build, sent in turn (default --num-dataset-entries)"
	for _, n := range []string{"conversation-num", "num-conversations", "num-sessions"} {
		fs.IntVar(&f.Conversations, n, 0, num)
	}
	for _, n := range []string{"conversation-turn-mean", "session-turns-mean"} {
		fs.Float64Var(&f.TurnMean, n, 1, "mean turns per conversation")
	}
	for _, n := range []string{"conversation-turn-stddev", "session-turns-stddev"} {
		fs.Float64Var(&f.TurnStddev, n, 0, "standard deviation of turns per conversation")
	}
	for _, n := range []string{"conversation-turn-delay-mean", "session-turn-delay-mean"} {
		fs.Float64Var(&f.DelayMean, n, 0, "mean delay between turns, in milliseconds, after the previous response")
	}
	for _, n := range []string{"conversation-turn-delay-stddev", "session-turn-delay-stddev"} {
		fs.Float64Var(&f.DelayStddev, n, 0, "standard deviation of the delay between turns, in milliseconds")
	}
	for _, n := range []string{"conversation-turn-delay-ratio", "session-delay-ratio"} {
		fs.Float64Var(&f.DelayRatio, n, 1, "factor scaling every turn delay (dataset delays included)")
	}
	fs.Float64Var(&f.UserRate, "user-centric-rate", 0, "requests per second of a user-centric run: --num-users users, each sending a turn every num-users/rate seconds")
	fs.IntVar(&f.Users, "num-users", 0, "users of a user-centric run")
	for _, n := range []string{"prefix-prompt-length", "prompt-prefix-length"} {
		fs.IntVar(&f.PrefixLength, n, 0, "tokens of each prefix prompt, put before each conversation's first prompt")
	}
	for _, n := range []string{"num-prefix-prompts", "prefix-prompt-pool-size", "prompt-prefix-pool-size"} {
		fs.IntVar(&f.PrefixPool, n, 0, "prefix prompts to draw from (the pool)")
	}
	fs.IntVar(&f.SystemLength, "shared-system-prompt-length", 0, "tokens of a system prompt sent first in every request")
	fs.IntVar(&f.ContextLength, "user-context-prompt-length", 0, "tokens of a user context of each conversation's own, sent after the system prompt")
	fs.StringVar(&f.InputFile, "input-file", "", "dataset file (see --custom-dataset-type)")
	fs.StringVar(&f.DatasetType, "custom-dataset-type", "", "type of --input-file: "+strings.Join(workload.DatasetTypes[:3], ", "))
	fs.StringVar(&f.PublicDataset, "public-dataset", "", "sharegpt: --input-file is a downloaded ShareGPT JSON file")
	fs.StringVar(&f.Sampling, "dataset-sampling-strategy", "", "how requests draw the prompts or conversations: sequential, random (with replacement) or shuffle (without, reshuffled each pass); default as in AIPerf: sequential for single_turn and multi_turn files, shuffle otherwise")
}

// visited notes which flags were given, once parsed.
func (f *shapeFlags) visited(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "conversation-num", "num-conversations", "num-sessions":
			f.ConversationsSet = true
		case "conversation-turn-mean", "session-turns-mean", "conversation-turn-stddev", "session-turns-stddev":
			f.TurnsSet = true
		case "conversation-turn-delay-mean", "session-turn-delay-mean", "conversation-turn-delay-stddev", "session-turn-delay-stddev":
			f.DelaySet = true
		case "conversation-turn-delay-ratio", "session-delay-ratio":
			f.RatioSet = true
		case "request-count", "num-requests":
			f.CountSet = true
		}
	})
}
