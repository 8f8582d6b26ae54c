package commands

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/privatefile"
	"github.com/llmtap/llmtap/internal/termsafe"
)

func init() {
	register("trace", "stats [--json] [--format F] FILE… | convert [--from F] --to mooncake IN OUT | merge [-o OUT] [--window D] FILE…",
		"Summarises, converts and merges request traces (Mooncake, Azure, BurstGPT, llmtap records)",
		`Works on request traces: published ones (Mooncake/AIPerf JSONL, Azure LLM inference CSV,
BurstGPT CSV) and llmtap's own records and payload files. The format is detected from the file
unless --format/--from names it (auto, mooncake, records, payloads, azure, burstgpt).

  llmtap trace stats [--json] [--format F] [--skip-bad] FILE…
      prints request count, span, mean and peak-minute rate, input/output token mean and
      p50/p90/p99, inter-arrival CV, prefix-block reuse and failures of each file.

  llmtap trace convert [--from F] --to mooncake [--round-ms] [--keep-sessions] IN OUT
      writes IN as an AIPerf-compatible Mooncake JSONL trace (OUT "-" is stdout), sorted by
      arrival, rebased to start at zero, with synthetic 512-token hash ids for requests that
      have none. The output file is created with mode 0600.

  llmtap trace merge [-o OUT] [--window 5m] [--round-ms] [--keep-sessions] [--skip-bad] FILE…
      merges llmtap trace files (trace-<UTC start>.jsonl) of several instances and rotations
      into one Mooncake JSONL trace: each row's absolute arrival is its file's start (from the
      name) plus its timestamp; rows are ordered by it and rebased to the earliest; hash ids
      are kept as the files hold them, so two requests share a prefix in the output exactly as
      far as their ids agree in the files (give every instance the same LLMTAP_FLEET_KEY). The
      merge streams: a row is written when its request ends, so each file is read ahead only
      --window (the longest request) and memory holds the rows of that window per file, not
      the files; a row arriving more than --window before one already written stops the merge
      with its file and line. Instances' clocks are trusted as they are: a skew of S between two
      instances moves their requests by S against each other, so keep them synchronised (NTP
      keeps skew within milliseconds). A request in flight across a rotation has timestamp 0
      in its file and lands at the file's start. Records files (records-<UTC start>.jsonl)
      and payload files (payloads-<UTC start>.jsonl) merge alike, one kind at a time, into
      one file of their kind: record lines byte for byte, ordered by their start; payload
      lines rebased like the trace, only timestamp_ms rewritten.`,
		runTrace)
}

// runTrace dispatches `llmtap trace stats|convert`.
func runTrace(fs *flag.FlagSet, args []string) (int, error) {
	return traceMain(os.Stdout, fs.Output(), args)
}

// traceMain is runTrace with its output streams as parameters, for in-process tests.
func traceMain(stdout, stderr io.Writer, args []string) (int, error) {
	if len(args) == 0 {
		traceUsage(stderr)
		return 2, errors.New("missing subcommand")
	}
	switch args[0] {
	case "stats":
		return traceStats(stdout, stderr, args[1:])
	case "convert":
		return traceConvert(stdout, stderr, args[1:])
	case "merge":
		return traceMerge(stdout, stderr, args[1:]) // trace_merge.go
	case "help", "-h", "-help", "--help":
		traceUsage(stderr)
		return 0, nil
	}
	traceUsage(stderr)
	return 2, fmt.Errorf("unknown subcommand %q", args[0])
}

func traceUsage(w io.Writer) {
	fmt.Fprint(w, `usage:
  llmtap trace stats [--json] [--format auto|mooncake|records|payloads|azure|burstgpt] [--skip-bad] FILE…
  llmtap trace convert [--from FORMAT] --to mooncake [--round-ms] [--keep-sessions] IN OUT
  llmtap trace merge [-o OUT] [--window 5m] [--round-ms] [--keep-sessions] [--skip-bad] FILE…
`)
}

func traceStats(stdout, stderr io.Writer, args []string) (int, error) {
	stdout = termsafe.Writer(stdout) // a trace file's text is anyone's
	fs := flag.NewFlagSet("llmtap trace stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var format trace.Format
	fs.Var(&format, "format", "trace format: auto, mooncake, records, payloads, azure or burstgpt")
	asJSON := fs.Bool("json", false, "print a JSON array, one object per file")
	skipBad := fs.Bool("skip-bad", false, "skip and count malformed lines instead of stopping at the first")
	if code, err := parseFiles(fs, args); err != nil {
		return code, err
	}
	var all []trace.FileSummary
	for _, path := range fs.Args() {
		st, err := trace.SummarizeFile(path, trace.Options{Format: format, SkipBad: *skipBad})
		if err != nil {
			return 1, err
		}
		all = append(all, st)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return 1, err
		}
		return 0, nil
	}
	for i, st := range all {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := printStats(stdout, st); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

func printStats(w io.Writer, st trace.FileSummary) error {
	s := st.Summary
	fmt.Fprintf(w, "%s (%s)\n", st.File, st.Format)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  requests\t%d\tfailures %d\n", s.Requests, s.Failures)
	fmt.Fprintf(tw, "  span\t%.1f s\t%d distinct timestamps\n", s.SpanSeconds, s.DistinctTimestamps)
	if s.SpanSeconds >= 60 {
		fmt.Fprintf(tw, "  rate\t%s req/s\tpeak minute %s req/s at +%.0f s\n", rate(s.Rate), rate(s.PeakMinuteRate), s.PeakMinuteStart)
	} else {
		fmt.Fprintf(tw, "  rate\t%s req/s\tno peak minute: the trace spans less than a minute\n", rate(s.Rate))
	}
	fmt.Fprintf(tw, "  inter-arrival CV\t%.2f\t\n", s.IATCV)
	fmt.Fprintf(tw, "  input tokens\tmean %.1f\tp50 %s  p90 %s  p99 %s  (min %d, max %d)\n",
		s.Input.Mean, num(s.Input.P50), num(s.Input.P90), num(s.Input.P99), s.Input.Min, s.Input.Max)
	fmt.Fprintf(tw, "  output tokens\tmean %.1f\tp50 %s  p90 %s  p99 %s  (min %d, max %d)\n",
		s.Output.Mean, num(s.Output.P50), num(s.Output.P90), num(s.Output.P99), s.Output.Min, s.Output.Max)
	if s.HashBlocks > 0 {
		fmt.Fprintf(tw, "  prefix reuse\t%.1f %%\tof %d blocks seen earlier\n", 100*s.PrefixReuse, s.HashBlocks)
	} else {
		fmt.Fprintf(tw, "  prefix reuse\tn/a\tno hash ids in this format\n")
	}
	if st.TornLine > 0 {
		fmt.Fprintf(tw, "  torn last line\t%d\tignored (the writer was interrupted)\n", st.TornLine)
	}
	if st.Skipped > 0 {
		fmt.Fprintf(tw, "  skipped lines\t%d\tfirst: %s\n", st.Skipped, st.FirstSkipped)
	}
	return tw.Flush()
}

// rate prints a rate with three decimals (the README's precision), or four significant digits
// for traces slower than one request a second, which three decimals would flatten.
func rate(v float64) string {
	if v >= 1 || v == 0 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// num prints an interpolated percentile without trailing noise: integers plainly, others with
// two decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func traceConvert(stdout, stderr io.Writer, args []string) (int, error) {
	fs := flag.NewFlagSet("llmtap trace convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var from trace.Format
	fs.Var(&from, "from", "input format: auto, mooncake, records, payloads, azure or burstgpt")
	to := fs.String("to", "", "output format (mooncake)")
	roundMs := fs.Bool("round-ms", false, "write whole milliseconds (for tools that want integer timestamps)")
	keepSessions := fs.Bool("keep-sessions", false, "write session_id and delay (off by default: AIPerf would append earlier turns to prompts that may already hold them)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed lines instead of stopping at the first")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *to != "mooncake" {
		return 2, fmt.Errorf("--to %q: only mooncake is written", *to)
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2, errors.New("want IN and OUT")
	}
	in, out := fs.Arg(0), fs.Arg(1)
	reqs, info, synthesized, err := trace.ReadRebased(in, trace.Options{Format: from, SkipBad: *skipBad})
	if err != nil {
		return 1, err
	}
	err = writeOut(stdout, out, func(w io.Writer) error {
		return trace.WriteMooncake(w, reqs, trace.WriterOptions{RoundMs: *roundMs, OmitSessions: !*keepSessions})
	})
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "llmtap trace convert: %d requests from %s (%s) to %s (mooncake); %d given synthetic hash ids",
		len(reqs), in, info.Format, out, synthesized)
	if info.Torn > 0 {
		fmt.Fprintf(stderr, "; torn last line %d ignored", info.Torn)
	}
	if info.Skipped > 0 {
		fmt.Fprintf(stderr, "; %d malformed lines skipped (first: %v)", info.Skipped, info.FirstSkipped)
	}
	fmt.Fprintln(stderr)
	return 0, nil
}

// parseFiles parses the flags of a subcommand that takes one or more files: exit code 2 and an
// error when the flags are bad or no file is given.
func parseFiles(fs *flag.FlagSet, args []string) (int, error) {
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2, errors.New("no trace file given")
	}
	return 0, nil
}

// writeOut writes to stdout when out is "-", else to the file out (created 0600 through
// privatefile.Write).
func writeOut(stdout io.Writer, out string, write func(io.Writer) error) error {
	if out == "-" {
		return write(stdout)
	}
	return privatefile.Write(out, write)
}
