package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// ArtifactDir is AIPerf's artifact folder of a run, artifacts/<model>-<endpoint>-<mode><value>
// (for example "artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency2"), with the endpoint type's
// AIPerf name (workload.ArtifactName) and characters that do not belong in a file name
// replaced by "_".
func ArtifactDir(model, endpointType, mode string) string {
	name := model + "-" + workload.ArtifactName(endpointType) + "-" + mode
	return filepath.Join("artifacts", strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, name))
}

// WriteConsole prints the AIPerf-style table of the run's requests (every status class
// combined, as AIPerf counts them), the causes of the failures, then the generator's
// self-check and the footer.
func WriteConsole(w io.Writer, e aiperf.Export, dur time.Duration, files []string) error {
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
		ms(gen.ScheduleLag.P50), ms(gen.ScheduleLag.P99), ms(gen.ScheduleLag.Max), LateThreshold, gen.Late, gen.ScheduleLag.Count)
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
		case strings.HasSuffix(f, SnapshotFile):
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
func writeFailures(w io.Writer, errs []aiperf.ErrorCount, unfinished int64) {
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
