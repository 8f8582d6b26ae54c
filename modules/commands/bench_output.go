package commands

import (
	"math"
	"strconv"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/workload"
)

// formatValue writes a flag value for a folder name: 10, 2.5.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// newRunInfo describes a parsed bench or replay command line.
func newRunInfo(fr flagReader, cli, mode, dir string, seed uint64) loadtest.RunInfo {
	info := loadtest.RunInfo{Seed: seed, CLICommand: cli, Mode: mode, Flags: fr.values()}
	str, num := fr.str, fr.num
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
	in.CLICommand = cli
	if t := str("tokenizer"); t != "" {
		in.Tokenizer = &loadtest.TokenizerConfig{Name: t}
	}
	shapeInput(in, fr)
	return info
}
