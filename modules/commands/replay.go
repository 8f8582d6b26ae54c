package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/record"
)

func init() {
	register("replay", "[--model M] [--url URL] [--speedup X] [--max-requests N] [--trace-session-sample-ratio R] [--fixed-schedule-start-offset MS] [--fixed-schedule-end-offset MS] [--compare-to RECORDED…] TRACE",
		"Replays a request trace against a server with its original timing, measured by llmtap's engine",
		`Sends the requests of a trace at their recorded times (divided by --speedup) and measures
every response with the same engine the llmtap proxy uses. Any format the trace readers accept:
Mooncake/AIPerf JSONL, Azure LLM inference CSV, BurstGPT CSV, llmtap records and payload files.

Payload files are replayed verbatim: each body exactly as recorded, to its recorded path.
Other formats get synthetic prompts of exactly input_length o200k tokens (shared prefixes where
the trace has hash_ids) and output_length as the output limit. A session's turns are sent one
after the other: each after the previous response ended plus the turn's delay (÷ --speedup).
A turn's body is sent once, as recorded (AIPerf would prepend the earlier turns to it).
--trace-session-sample-ratio R replays a fraction of the sessions, each whole;
--fixed-schedule-start-offset/--fixed-schedule-end-offset MS replay the sessions whose first
turn is in that slice of the trace, the schedule starting at the start offset (docs/sessions.md).
--request-timeout-seconds S cancels a request still open S seconds after it was sent and counts
it as AIPerf does (an error of type TimeoutError).
--model defaults to the model the trace names (llmtap's trace, records and payload files do).
Outputs as llmtap bench: artifacts/<model>-<endpoint>-replay_speedup<X>/.

--compare-to RECORDED (repeatable: the folders or files of one recording, usually the proxy's
records the trace came from) prints the replay fidelity verdict after the replay, as
"llmtap report RECORDED --compare <artifact folder>" does: reproduced, not reproduced, or not
enough requests, with the metric that diverged most (docs/fidelity.md). The replay is judged as
the llmtap proxy it went through measured it when that proxy's records hold its requests (found
by X-Request-Id: the recording's folder when the replay goes through the proxy that recorded,
or --replay-records PATH), else as the replay's client measured it; the first line says which.`,
		runLoad(replayMain))
}

// replayMain is the replay command with its streams as parameters, for in-process tests.
func replayMain(ctx context.Context, stdout, stderr io.Writer, terminal bool, fs *flag.FlagSet, args []string, hook func(*bench.Spec, *bench.Result)) (int, error) {
	var cf clientFlags
	cf.register(fs)
	speedup := fs.Float64("speedup", 1, "replay this many times faster than recorded (2 = twice as fast)")
	maxReqs := fs.Int("max-requests", 0, "replay only the first N requests (0 = all)")
	format := trace.FormatAuto
	fs.Var(&format, "format", "trace format: auto, mooncake, records, payloads, azure, burstgpt")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines instead of stopping")
	var compareTo multiFlag
	fs.Var(&compareTo, "compare-to", "a recording (records folder or file; repeatable) to judge the replay's fidelity against")
	var replayRecords multiFlag
	fs.Var(&replayRecords, "replay-records", "with --compare-to: the records of the llmtap proxy the replay goes through (repeatable; default: the --compare-to recording's), to judge the replay as that proxy measured it")
	var ff fidelityFlags
	ff.register(fs, false)
	var sel traceSelect
	sel.register(fs)
	fitTokens := fs.Bool("fit-input-tokens", true, "without --tokenizer, size synthetic prompts by the input tokens the server reports: fit server tokens per prompt token from the first responses' usage")
	grace := fs.Float64("benchmark-grace-period", 30, "seconds responses may take after the trace's last request is due (inf: wait for all); requests still open then are left out of the results")
	var timeoutS float64
	registerRequestTimeout(fs, &timeoutS)
	if err := fs.Parse(reorderFlags(fs, args)); err != nil {
		return 2, err
	}
	if fs.NArg() != 1 {
		return 2, errors.New("want exactly one trace file")
	}
	path := fs.Arg(0)
	r, errs := cf.resolve()
	if !(*speedup > 0) || math.IsInf(*speedup, 1) {
		errs = append(errs, fmt.Errorf("--speedup %v: want a positive number", *speedup))
	}
	if *maxReqs < 0 {
		errs = append(errs, fmt.Errorf("--max-requests %d: must not be negative", *maxReqs))
	}
	errs = append(errs, sel.errs()...)
	graceD, err := bench.GracePeriod(*grace)
	if err != nil {
		errs = append(errs, err)
	}
	timeout, err := bench.RequestTimeout(timeoutS)
	if err != nil {
		errs = append(errs, err)
	}
	ff.o.Speedup = *speedup
	if _, err := ff.options(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return 2, errors.Join(errs...)
	}
	sayNotes(stderr, r.notes)
	reqs, info, lead, err := trace.ReadSelected(path, trace.Options{Format: format, SkipBad: *skipBad}, *maxReqs, trace.Selection{Ratio: sel.ratio, Seed: r.seed, Start: sel.start.at(), End: sel.end.at()}, func(kept, dropped int) {
		fmt.Fprintf(stderr, "%d of the trace's requests chosen (whole sessions), %d left out\n", kept, dropped)
	})
	if err != nil {
		return 1, err
	}
	if cf.model == "" {
		if cf.model = trace.Model(reqs); cf.model == "" && info.Format != trace.FormatPayloads {
			return 2, errors.New("--model is required: the trace names no model")
		}
		r.spec.Model = cf.model
	}
	model := cf.model
	if model == "" {
		model = "payloads"
	}
	mode := "replay_speedup" + bench.FormatValue(*speedup)
	dir := cf.artifactDir
	if dir == "" {
		dir = r.worker.Dir(bench.ArtifactDir(model, cf.endpointType, mode))
	}
	spec := cf.loadSpec(r, record.ClassReplay, dir, bench.NewRunInfo(commandLine(fs, "replay", args, nil), mode, dir, r.seed))
	spec.RequestTimeout, spec.Grace = timeout, graceD
	// Without --tokenizer the prompts are built of o200k tokens, which the server may count
	// otherwise: their sizes are fitted to the server's counts (--fit-input-tokens).
	rp := bench.Replay{Requests: reqs, Path: r.path, Body: r.spec, Tokens: r.tokens,
		FitTokens: *fitTokens && cf.tokenizer == "", Speedup: *speedup, Lead: lead, Worker: r.worker}
	fit, err := rp.Apply(spec)
	if err != nil {
		return 1, err
	}
	w := r.worker
	if w.Split() {
		fmt.Fprintf(stderr, "worker %d of %d: %d of the trace's requests, whole sessions\n", w.Index, w.Count, spec.Total)
	}
	fmt.Fprintf(stderr, "replaying %d requests of %s (%s) over %v at speedup %v\n", len(reqs), path, info.Format, spec.GraceFrom.Round(time.Millisecond), *speedup)
	var rec *report.Run
	if len(compareTo) > 0 { // read before the replay: a bad path is told before the load is sent
		if rec, err = report.Join(compareTo, "", termsafe.Writer(stderr)); err != nil {
			return 1, fmt.Errorf("--compare-to: %w", err)
		}
	}
	_, code, err := executeMain(ctx, spec, cf.apiListen, stdout, stderr, terminal, hook)
	if fit != nil {
		fmt.Fprintf(stderr, "input tokens: %s (--tokenizer names the server's tokenizer instead)\n", fit)
	}
	if rec == nil || code != 0 {
		return code, err
	}
	rep, err := report.Load(spec.Dir)
	if err != nil {
		return 1, fmt.Errorf("--compare-to: reading the replay's export: %w", err)
	}
	if len(replayRecords) == 0 {
		replayRecords = compareTo
	}
	repSide, err := report.ReplayedAtProxy(ctx, rep.Side(), replayRecords)
	if err != nil {
		return 1, err
	}
	if err := writeFidelity(stdout, rec.Side(), repSide, &ff); err != nil {
		return 1, err
	}
	return 0, nil
}

// reorderFlags lets flags follow the trace file name (`llmtap replay TRACE --speedup 20`), as
// users type it: arguments that are not flags are moved to the end.
func reorderFlags(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // flag.Parse reports it
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !(ok && bf.IsBoolFlag()) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, rest...)
}

// traceSelect is replay's choice of what of a trace is sent (trace.Selection), with AIPerf's
// flag names: --trace-session-sample-ratio, and --fixed-schedule-start-offset /
// --fixed-schedule-end-offset in milliseconds of the trace's timestamps.
type traceSelect struct {
	ratio      float64
	start, end msFlag
	auto       bool
}

// msFlag is an optional whole number of milliseconds, ≥ 0.
type msFlag struct {
	set bool
	ms  int64
}

func (f *msFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatInt(f.ms, 10)
}

func (f *msFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/int64(time.Millisecond) {
		return fmt.Errorf("want a whole number of milliseconds, 0 or more, got %q", s)
	}
	f.set, f.ms = true, v
	return nil
}

// at returns the offset as a duration, nil when unset.
func (f msFlag) at() *time.Duration {
	if !f.set {
		return nil
	}
	d := time.Duration(f.ms) * time.Millisecond
	return &d
}

func (s *traceSelect) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.ratio, "trace-session-sample-ratio", 1, "replay this fraction of the trace's sessions, each whole (a request without a session is a session of one); chosen by --random-seed")
	fs.Var(&s.start, "fixed-schedule-start-offset", "replay only sessions whose first request is at or after this many ms of the trace; the schedule starts at this offset")
	fs.Var(&s.end, "fixed-schedule-end-offset", "replay only sessions whose first request is at or before this many ms of the trace")
	fs.BoolVar(&s.auto, "fixed-schedule-auto-offset", false, "start the schedule at the first replayed request (the default unless --fixed-schedule-start-offset is given)")
}

// errs reports every problem of the flags.
func (s *traceSelect) errs() []error {
	var errs []error
	if !(s.ratio > 0 && s.ratio <= 1) {
		errs = append(errs, fmt.Errorf("--trace-session-sample-ratio %v: want a fraction in (0, 1]", s.ratio))
	}
	if s.auto && s.start.set {
		errs = append(errs, errors.New("--fixed-schedule-auto-offset and --fixed-schedule-start-offset exclude each other (as in AIPerf): the start offset is the schedule's zero"))
	}
	if s.start.set && s.end.set && s.end.ms < s.start.ms {
		errs = append(errs, fmt.Errorf("--fixed-schedule-end-offset %d is before --fixed-schedule-start-offset %d", s.end.ms, s.start.ms))
	}
	return errs
}
