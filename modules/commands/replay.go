package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/trace"
	"github.com/llmtap/llmtap/shadow/workload"
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
		runReplay)
}

func runReplay(fs *flag.FlagSet, args []string) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return replayMain(ctx, os.Stdout, fs.Output(), term.IsTerminal(int(os.Stderr.Fd())), fs, args, nil)
}

// replayMain is the replay command with its streams as parameters, for in-process tests.
func replayMain(ctx context.Context, stdout, stderr io.Writer, terminal bool, fs *flag.FlagSet, args []string, hook func(*loadtest.Spec, *loadtest.Result)) (int, error) {
	var cf clientFlags
	cf.register(fs)
	speedup := fs.Float64("speedup", 1, "replay this many times faster than recorded (2 = twice as fast)")
	maxReqs := fs.Int("max-requests", 0, "replay only the first N requests (0 = all)")
	format := trace.FormatAuto
	fs.Var(formatFlag{&format}, "format", "trace format: auto, mooncake, records, payloads, azure, burstgpt")
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
	graceD, err := gracePeriod(*grace)
	if err != nil {
		errs = append(errs, err)
	}
	timeout, err := requestTimeout(timeoutS)
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
	reqs, info, err := trace.ReadSorted(path, trace.Options{Format: format, SkipBad: *skipBad}, *maxReqs)
	if err != nil {
		return 1, err
	}
	var lead time.Duration
	if sel.active() {
		var dropped int
		reqs, lead, dropped = sel.apply(reqs, r.seed)
		fmt.Fprintf(stderr, "%d of the trace's requests chosen (whole sessions), %d left out\n", len(reqs), dropped)
		if len(reqs) == 0 {
			return 1, fmt.Errorf("%s: no session's first request is in the chosen slice and sample", path)
		}
	}
	if len(reqs) == 0 {
		return 1, fmt.Errorf("%s: no requests", path)
	}
	if cf.model == "" {
		for _, q := range reqs {
			if q.Model != "" {
				cf.model = q.Model
				break
			}
		}
		if cf.model == "" && info.Format != trace.FormatPayloads {
			return 2, errors.New("--model is required: the trace names no model")
		}
		r.spec.Model = cf.model
	}
	plan := planReplay(reqs)
	corpus, err := workload.CorpusFor(r.tokens) // synthetic prompts sized in --tokenizer tokens
	if err != nil {
		return 1, err
	}
	// Without --tokenizer the prompts are built of o200k tokens, which the server may count
	// otherwise: fit is learned from the usage of the first responses, and every prompt built
	// after it is sized so that the server counts the trace's input length (fit == nil: sized
	// as the trace says).
	var fit *workload.TokenFit
	var sent []atomic.Int32
	if *fitTokens && cf.tokenizer == "" && hasSynthetic(reqs) {
		fit, sent = new(workload.TokenFit), make([]atomic.Int32, len(reqs))
	}
	// AIPerf's session_num: the index of a request's conversation, in the order the trace first
	// names it; a request without a session is a conversation of its own.
	sessionNums := make([]int, len(reqs))
	bySession := map[string]int{}
	next := 0
	for i := range reqs {
		id := reqs[i].SessionID
		if k, ok := bySession[id]; ok && id != "" {
			sessionNums[i] = k
			continue
		}
		sessionNums[i] = next
		if id != "" {
			bySession[id] = next
		}
		next++
	}
	build := func(i int) (loadtest.Request, error) {
		q := &reqs[i]
		b := loadtest.Request{Path: r.path, Session: q.SessionID, SessionNum: &sessionNums[i]}
		if q.Payload != nil {
			b.Body = q.Payload
			if q.Path != "" {
				b.Path = q.Path
			}
			return b, nil
		}
		n := q.InputLength
		if fit != nil {
			n = fit.Size(n)
			sent[i].Store(int32(min(n, math.MaxInt32)))
		}
		body, err := r.spec.TraceBody(corpus, n, q.OutputLength, q.HashIDs, i)
		b.Body = body
		return b, err
	}
	// Bodies are built before the run when they fit in memory comfortably, so that the send
	// path does no prompt building or JSON encoding and the schedule is kept to the millisecond;
	// not when their sizes are fitted to the server's counts as the responses come.
	total := 0
	for i := range reqs {
		total += reqs[i].InputLength
	}
	if fit == nil && total <= prebuildTokens {
		bodies := make([]loadtest.Request, len(reqs))
		for i := range reqs {
			if bodies[i], err = build(i); err != nil {
				return 1, err
			}
		}
		build = func(i int) (loadtest.Request, error) { return bodies[i], nil }
	}
	model := cf.model
	if model == "" {
		model = "payloads"
	}
	mode := "replay_speedup" + formatValue(*speedup)
	dir := cf.artifactDir
	if dir == "" {
		dir = workerDir(filepath.Join("artifacts", artifactName(model, workload.ArtifactName(cf.endpointType), mode)), r.worker)
	}
	w := r.worker
	heads := loadtest.Take(w, plan.heads)
	if len(heads) == 0 {
		return 1, fmt.Errorf("worker %d of %d has no request: the trace schedules %d", w.Index, w.Count, len(plan.heads))
	}
	times := make([]time.Duration, len(heads))
	for i, h := range heads {
		times[i] = reqs[h].Timestamp
	}
	arrivals, err := loadgen.NewTrace(times, *speedup)
	if err != nil {
		return 1, err
	}
	last := time.Duration(0)
	if n := len(plan.headTimes); n > 0 {
		last = time.Duration(float64(plan.headTimes[n-1]-plan.headTimes[0]+lead) / *speedup)
	}
	// A worker's first request keeps its place in the whole trace's schedule, which starts
	// at --fixed-schedule-start-offset when one is given.
	shift := time.Duration(float64(times[0]-plan.headTimes[0]+lead) / *speedup)
	spec := &loadtest.Spec{
		Class: record.ClassReplay, Label: "replay", BaseURL: cf.url, Headers: r.headers, Seed: r.seed,
		CancelRate: cf.cancelRate / 100, CancelDelay: seconds(cf.cancelDelay), SLOs: r.slos, Tokens: r.tokens, Dir: dir,
		Schedule: loadgen.Config{Arrivals: loadtest.Shifted(arrivals, shift), MaxInFlight: -1}, Total: plan.requests(heads),
		Build: build, MapN: func(n int) int { return heads[n] }, Log: stderr, Terminal: terminal,
		Info:   newRunInfo(fs, "llmtap replay "+strings.Join(args, " "), mode, dir, r.seed),
		Worker: w, StartAt: r.startAt, RequestTimeout: timeout,
	}
	if fit != nil {
		spec.OnRecord = func(n int, rec *record.Record) {
			if n >= 0 && n < len(sent) && rec.InputTokensSource == "usage" {
				fit.Observe(int(sent[n].Load()), rec.InputTokens)
			}
		}
	}
	if plan.hasSessions {
		spec.Next = func(i int) (int, time.Duration, bool) {
			nx := plan.next[i]
			if nx < 0 {
				return 0, 0, false
			}
			return nx, time.Duration(float64(reqs[nx].Delay) / *speedup), true
		}
	}
	// The grace period starts when the trace's last request is due.
	spec.Grace, spec.GraceFrom = graceD, last
	spec.Schedule.Duration = 0
	if w.Split() {
		fmt.Fprintf(stderr, "worker %d of %d: %d of the trace's requests, whole sessions\n", w.Index, w.Count, spec.Total)
	}
	fmt.Fprintf(stderr, "replaying %d requests of %s (%s) over %v at speedup %v\n", len(reqs), path, info.Format, last.Round(time.Millisecond), *speedup)
	var rec *report.Run
	if len(compareTo) > 0 { // read before the replay: a bad path is told before the load is sent
		if rec, err = loadRuns(compareTo, ""); err != nil {
			return 1, fmt.Errorf("--compare-to: %w", err)
		}
	}
	code, err := executeMain(ctx, spec, cf.apiListen, stdout, hook)
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
	repSide, err := replayedAtProxy(ctx, side(rep), replayRecords)
	if err != nil {
		return 1, err
	}
	if err := writeFidelity(stdout, side(rec), repSide, &ff); err != nil {
		return 1, err
	}
	return 0, nil
}

// prebuildTokens bounds the prompt tokens of a trace whose bodies are all built before the
// run: about 5 bytes a token, so 50 M tokens is 250 MB.
const prebuildTokens = 50_000_000

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

// replayPlan splits a trace into the requests sent on the open-loop schedule (heads: requests
// without a session, and each session's first turn) and the chain of each session's turns.
type replayPlan struct {
	heads       []int           // trace indices of scheduled requests, in time order
	headTimes   []time.Duration // their timestamps
	next        []int           // trace index of the turn after i in its session, −1 if none
	hasSessions bool
}

// requests counts the requests the scheduled heads send, each with its session's later turns.
func (p replayPlan) requests(heads []int) int {
	n := 0
	for _, h := range heads {
		for i := h; i >= 0; i = p.next[i] {
			n++
		}
	}
	return n
}

func planReplay(reqs []trace.Request) replayPlan {
	p := replayPlan{next: make([]int, len(reqs))}
	last := map[string]int{}
	for i := range reqs {
		p.next[i] = -1
		sid := reqs[i].SessionID
		if sid == "" {
			p.heads = append(p.heads, i)
			continue
		}
		if prev, ok := last[sid]; ok {
			p.next[prev] = i
			p.hasSessions = true
		} else {
			p.heads = append(p.heads, i)
		}
		last[sid] = i
	}
	for _, i := range p.heads {
		p.headTimes = append(p.headTimes, reqs[i].Timestamp)
	}
	return p
}

// hasSynthetic reports whether any request of the trace is replayed with a synthetic prompt
// (sized by its input length) rather than its recorded body.
func hasSynthetic(reqs []trace.Request) bool {
	for i := range reqs {
		if reqs[i].Payload == nil {
			return true
		}
	}
	return false
}
