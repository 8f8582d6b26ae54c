package commands

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/report"
)

func init() {
	register("report", "RUN… [--compare RUN2 [fidelity margins]] [--class C] [--compare-class C2] [-o report.html] [--png DIR] [--png-size 960x400] [--slo 'METRIC:VALUE …' [--slo-target 0.99]] [--canary-verdict JSON] [--json FILE] | --merge DIR… [--merge-out DIR]",
		"Writes an HTML report (and PNG charts) of a recorded or benchmarked run",
		`Reads a run from RUN — a folder of records written by the proxy's recorder (records-*.jsonl,
with timeline*.jsonl when one was written), a llmtap bench artifact folder
(profile_export.jsonl), an NVIDIA AIPerf artifact folder (its profile_export.jsonl, with the
model from profile_export_aiperf.json), a llmtap demo output folder (records.jsonl), or one
such file — and
writes one self-contained HTML file: summary table, charts over time (TTFT and ITL p50/p99,
request, token and error rates, requests in flight, GPU when the timeline has it), CDFs and
histograms of TTFT, ITL, request latency and output tokens per class and model, and the token
timelines of the slowest requests. --compare RUN2 puts a second run beside the first (before
and after a change, or an AIPerf run beside a llmtap one); --class and --compare-class keep one traffic class of each, so
"RUN --class live --compare RUN --compare-class mirror" sets live against mirror. --png DIR
also writes every chart as a PNG image.

With --compare, the report also prints the replay fidelity verdict of RUN2 against RUN (a
recording, given as one or more folders or files, joined) — reproduced, not reproduced, or not
enough requests, and the metric that diverged most — judged by the equivalence margins
--margin, --tail-margin, --margin-ms, --error-margin, --arrival-margin, --min-rate-corr
(docs/fidelity.md); --compare-traces RECORDED_TRACE,REPLAYED_TRACE adds prefix reuse, and
--replay-speedup the speedup the replay ran at.

When the records hold live requests and their mirror copies (the handler's mirror, with the
recorder on), the report adds the canary verdict per model — better, same, worse or not enough
pairs yet — computed offline by the same engine as GET /llmtap/mirror (docs/canary.md), with
the handler's verdict options given as JSON in --canary-verdict. --slo adds the SLO attainment
per class, model and tenant, in the --goodput syntax of llmtap bench, with burn rates against
--slo-target (docs/slo.md). Both are printed, in the HTML, and in --json FILE.

--merge DIR… merges the artifact folders of the workers of one split llmtap bench or replay
(--worker-index/--worker-count, docs/workers.md) into one AIPerf export in --merge-out: the
workers' HdrHistograms (profile_export_hdr.json) are merged, so every percentile is the one of
all the requests together, never an average of the workers'.`,
		runReport)
}

func runReport(fs *flag.FlagSet, args []string) (int, error) {
	compare := fs.String("compare", "", "a second run to compare with RUN")
	out := fs.String("o", "report.html", "the HTML file to write")
	pngDir := fs.String("png", "", "folder to write each chart to as <chart>.png")
	pngSize := fs.String("png-size", "960x400", "size of the PNG images, WIDTHxHEIGHT pixels")
	class := fs.String("class", "", "keep only this traffic class of RUN (live, shadow, mirror, replay, bench)")
	compareClass := fs.String("compare-class", "", "keep only this traffic class of RUN2 (default: --class)")
	merge := fs.Bool("merge", false, "merge the artifact folders given (the workers of one split bench or replay) into one AIPerf export")
	mergeOut := fs.String("merge-out", "merged", "the folder --merge writes the merged export to")
	var ff fidelityFlags
	ff.register(fs, true)
	var df decideFlags
	df.register(fs)
	if err := fs.Parse(reorderFlags(fs, args)); err != nil { // flags may come before or after RUN
		return 2, err
	}
	pos := fs.Args()
	if *merge {
		return reportMerge(os.Stdout, pos, *mergeOut)
	}
	if len(pos) == 0 || (len(pos) > 1 && *compare == "") {
		fs.Usage()
		return 2, fmt.Errorf("expected one RUN folder or file (several only with --compare), got %d arguments", len(pos))
	}
	var w, h int
	if _, err := fmt.Sscanf(strings.ToLower(*pngSize), "%dx%d", &w, &h); err != nil {
		return 2, fmt.Errorf("--png-size %q: expected WIDTHxHEIGHT, for example 960x400", *pngSize)
	}
	if w < report.MinPNGWidth || h < report.MinPNGHeight {
		return 2, fmt.Errorf("--png-size %q: a chart image must be at least %dx%d pixels", *pngSize, report.MinPNGWidth, report.MinPNGHeight)
	}
	if _, err := ff.options(); err != nil {
		return 2, err
	}
	decide, err := df.options()
	if err != nil {
		return 2, err
	}
	paths := [][]string{pos}
	if *compare != "" {
		paths = append(paths, []string{*compare})
	}
	if *compareClass == "" {
		*compareClass = *class
	}
	classes := []string{*class, *compareClass}
	var runs []*report.Run
	for i, p := range paths {
		run, err := report.Join(p, classes[i], termsafe.Writer(os.Stderr))
		if err != nil {
			return 1, err
		}
		runs = append(runs, run)
	}
	rep, err := report.Build(runs...)
	if err != nil {
		return 1, err
	}
	rep.Decide(decide)
	if *pngDir != "" {
		files, err := rep.WritePNGs(*pngDir, w, h)
		if err != nil {
			return 1, fmt.Errorf("writing PNG charts: %w", err)
		}
		fmt.Printf("PNG charts: %d files in %s\n", len(files), *pngDir)
	}
	f, err := os.Create(*out)
	if err != nil {
		return 1, err
	}
	err = rep.WriteHTML(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 1, fmt.Errorf("writing %s: %w", *out, err)
	}
	abs, _ := filepath.Abs(*out)
	stdout := termsafe.Writer(os.Stdout) // model and tenant names in the decisions are the clients'
	for _, run := range runs {
		fmt.Fprintf(stdout, "%s: %d requests\n", run.Name, len(run.Records))
	}
	fmt.Fprintf(stdout, "Report: %s\n", abs)
	if err := df.writeDecisions(stdout, rep.Decisions); err != nil {
		return 1, err
	}
	if len(runs) == 2 {
		if err := writeFidelity(stdout, runs[0].Side(), runs[1].Side(), &ff); err != nil {
			return 1, err
		}
	}
	return 0, nil
}
