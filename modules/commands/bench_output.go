package commands

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/workload"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// artifactName is AIPerf's artifact folder name, <model>-<endpoint>-<mode><value> (for
// example "Qwen_Qwen3-0.6B-openai-chat-concurrency2"), with characters that do not belong in
// a file name replaced by "_".
func artifactName(model, endpoint, mode string) string {
	name := model + "-" + endpoint + "-" + mode
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, name)
}

// formatValue writes a flag value for a folder name: 10, 2.5.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// newRunInfo describes a parsed bench or replay command line.
func newRunInfo(fs *flag.FlagSet, cli, mode, dir string, seed uint64) loadtest.RunInfo {
	info := loadtest.RunInfo{Seed: seed, CLICommand: cli, Mode: mode, Flags: flagValues(fs)}
	fr := newFlagReader(fs)
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

// writeConsole prints the AIPerf-style table of the run's requests (every status class
// combined, as AIPerf counts them), the causes of the failures, then the generator's
// self-check and the footer.
func writeConsole(w io.Writer, e loadtest.Export, dur time.Duration, files []string) error {
	gen, cli := e.Generator, e.Info.CLICommand
	g := e.Group
	if g.Scalars[stats.TagRequestCount].Value+g.Scalars[stats.TagErrorRequestCount].Value == 0 {
		fmt.Fprintln(w, "no request was measured")
	} else if err := stats.WriteTable(w, stats.Summary{Groups: []stats.GroupSummary{g}, SLOs: e.SLOs}); err != nil {
		return err
	}
	writeFailures(w, e.Errors, e.Unfinished)
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	fmt.Fprintf(w, "\nLoad generator self-check\n")
	fmt.Fprintf(w, "  schedule lag (ms)       p50 %s  p99 %s  max %s  over %v: %d of %d\n",
		ms(gen.ScheduleLag.P50), ms(gen.ScheduleLag.P99), ms(gen.ScheduleLag.Max), loadtest.LateThreshold, gen.Late, gen.ScheduleLag.Count)
	fmt.Fprintf(w, "  effective latency (ms)  avg %s  p50 %s  p99 %s  (queue wait p99 %s)\n",
		ms(gen.EffectiveLatency.Avg), ms(gen.EffectiveLatency.P50), ms(gen.EffectiveLatency.P99), ms(gen.QueueWait.P99))
	fmt.Fprintf(w, "  scheduled %d  sent %d  dropped %d  cancelled %d  records dropped %d\n",
		gen.Scheduled, gen.Sent, gen.Dropped, gen.Cancelled, gen.RecordsDropped)
	fmt.Fprintf(w, "  generator CPU           %.0f%% of a core\n", 100*gen.CPUUtilization)
	if gen.CPUWarning != "" {
		fmt.Fprintf(w, "  WARNING: %s\n", gen.CPUWarning)
	}
	fmt.Fprintf(w, "\nCLI Command: %s\nBenchmark Duration: %.3f sec\n", cli, dur.Seconds())
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".csv"):
			fmt.Fprintf(w, "CSV Export: %s\n", f)
		case strings.HasSuffix(f, ".jsonl"):
			fmt.Fprintf(w, "Records Export: %s\n", f)
		case strings.HasSuffix(f, loadtest.SnapshotFile):
			fmt.Fprintf(w, "HdrHistogram Snapshot: %s\n", f)
		default:
			fmt.Fprintf(w, "JSON Export: %s\n", f)
		}
	}
	return nil
}

// maxConsoleErrors is how many distinct failure causes the console lists.
const maxConsoleErrors = 5

// writeFailures prints why requests failed, most frequent cause first, and how many were still
// open when the grace period ended (left out of the results, as AIPerf does).
func writeFailures(w io.Writer, errs []loadtest.ErrorCount, unfinished int64) {
	if len(errs) > 0 {
		fmt.Fprintln(w, "Failed requests by cause:")
		for i, e := range errs {
			if i == maxConsoleErrors {
				fmt.Fprintf(w, "  … and %d more causes (error_summary in the JSON export)\n", len(errs)-i)
				break
			}
			code, typ := "", ""
			if e.Details.Code != nil {
				code = " " + strconv.Itoa(*e.Details.Code)
			}
			if e.Details.Type != nil {
				typ = *e.Details.Type
			}
			fmt.Fprintf(w, "  %d × %s%s: %s\n", e.Count, typ, code, e.Details.Message)
		}
	}
	if unfinished > 0 {
		fmt.Fprintf(w, "%d requests were still open when the grace period ended: left out of the results\n", unfinished)
	}
}
