package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

func init() {
	register("bench", "--model M [--url URL] [--concurrency N | --request-rate R] [--request-count N | --benchmark-duration S] […]",
		"Benchmarks an inference server with AIPerf's flags, measured by llmtap's engine",
		`Sends synthetic load to an OpenAI-compatible (or Anthropic, or Ollama) server and measures
every response with the same engine the llmtap proxy uses, with AIPerf's flag names:

  closed loop        --concurrency N (default 1, as AIPerf, when no --request-rate is given)
  open loop          --request-rate R [--arrival-pattern constant|poisson|gamma] [--arrival-smoothness K]
  rate with ceiling  --request-rate R --concurrency N  (waiting shows as effective − request latency)
  stop after         --request-count N and/or --benchmark-duration S (default 10 requests)

Conversations (--conversation-turn-mean, …), --user-centric-rate, shared prefixes and
--input-file datasets take AIPerf's flags too: docs/bench-shapes.md. Ramps, warmup by
duration, --request-timeout-seconds, --concurrency 1,4,16 sweeps, --num-profile-runs and
--slice-duration timeslices: docs/bench-runs.md.

Prompts have exactly --isl (± --isl-stddev, or a --seq-dist mix) tokens (o200k_base, or the
--tokenizer file's), cut from an embedded public-domain text; --osl is sent as max_completion_tokens (max_tokens with
--use-legacy-max-tokens); force it with --extra-inputs min_tokens:N --extra-inputs ignore_eos:true.
Results go to artifacts/<model>-<endpoint>-<mode><value>/: profile_export_aiperf.json and .csv,
profile_export.jsonl (one line per request), in AIPerf's layout and with AIPerf's metric
meanings (docs/metrics.md), with the generator's own schedule lag and CPU use.`,
		runLoad(benchMain))
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// clientFlags are the flags bench and replay share: where to send and how to write bodies.
type clientFlags struct {
	url, endpoint, endpointType, model, apiKey, artifactDir string
	apiListen, tokenizer                                    string
	streaming, legacyMaxTokens                              bool
	headers, extra                                          multiFlag
	seed                                                    uint64
	goodput                                                 string
	cancelRate, cancelDelay                                 float64
	workerFlags
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "http://localhost:8000", "server base URL")
	fs.StringVar(&c.url, "u", "http://localhost:8000", "alias of --url")
	fs.StringVar(&c.endpoint, "endpoint", "", "URL path, overriding the endpoint type's default")
	fs.StringVar(&c.endpointType, "endpoint-type", workload.EndpointChat, "request format: "+strings.Join(workload.EndpointTypes, ", "))
	fs.StringVar(&c.model, "model", "", "model name sent in each request")
	fs.StringVar(&c.model, "m", "", "alias of --model")
	fs.StringVar(&c.apiKey, "api-key", "", "sent as Authorization: Bearer KEY (x-api-key for messages)")
	fs.Var(&c.headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.Var(&c.headers, "H", "alias of --header")
	fs.BoolVar(&c.streaming, "streaming", true, "ask for streamed responses (--streaming=false for unary)")
	fs.BoolVar(&c.legacyMaxTokens, "use-legacy-max-tokens", false, "send the output length as max_tokens instead of max_completion_tokens")
	fs.Var(&c.extra, "extra-inputs", "key:value merged into every body, typed as JSON (min_tokens:128, ignore_eos:true), or a JSON object (repeatable)")
	fs.Uint64Var(&c.seed, "random-seed", workload.DefaultSeed, "seed of prompts, lengths, arrivals and cancellations (every value is a seed, 0 included, as in AIPerf; unset: 42, where AIPerf draws one)")
	fs.StringVar(&c.goodput, "goodput", "", "SLOs as metric:value pairs, e.g. 'time_to_first_token:100 inter_token_latency:5'")
	fs.Float64Var(&c.cancelRate, "request-cancellation-rate", 0, "percentage (0-100) of requests to cancel")
	fs.Float64Var(&c.cancelDelay, "request-cancellation-delay", 0, "seconds after a request is sent before it is cancelled")
	fs.StringVar(&c.artifactDir, "artifact-dir", "", "output folder (default artifacts/<model>-<endpoint>-<mode><value>)")
	fs.StringVar(&c.apiListen, "api-listen", "", "serve the Connect API on this address while running (127.0.0.1:PORT), for llmtap top --admin")
	fs.StringVar(&c.tokenizer, "tokenizer", "", "Hugging Face tokenizer.json that sizes the synthetic prompts and counts the tokens the server does not report (default: o200k_base)")
	c.workerFlags.register(fs)
}

// fill sets the fields of a load spec these flags give, so that a flag and the shadow config
// field of the same meaning share the spec's default and check. Unlike the config's, a zero
// --random-seed is a seed; the default seed is a fixed one, so that two runs send the same
// prompts (AIPerf draws a random seed instead; docs/metrics.md lists the deviation).
func (c *clientFlags) fill(s *workload.Spec) {
	stream := c.streaming
	s.URL, s.Model, s.EndpointType, s.Extra, s.Streaming, s.Seed = c.url, c.model, c.endpointType, c.extra, &stream, c.seed
}

// resolved is the validated common configuration.
type resolved struct {
	spec    workload.BodySpec
	path    string
	headers http.Header
	slos    []stats.SLO
	seed    uint64
	tokens  tokens.Counter // --tokenizer
	// notes are said once on the console before the run: meanings that changed.
	notes []string
	// worker is this process's share of the workload; startAt the shared start (zero: now).
	worker  bench.Worker
	startAt time.Time
}

func (c *clientFlags) resolve() (resolved, []error) {
	var r resolved
	var errs []error
	r.seed = c.seed
	var load workload.Spec
	c.fill(&load)
	var err error
	if r.spec, err = load.Body(); err != nil {
		errs = append(errs, err)
	}
	r.spec.LegacyMaxTokens = c.legacyMaxTokens
	r.path = workload.Path(c.endpoint, c.endpointType)
	if !workload.HTTPURL(c.url) {
		errs = append(errs, fmt.Errorf("--url %q: want http:// or https://", c.url))
	}
	c.url = strings.TrimRight(c.url, "/")
	var herrs []error
	r.headers, herrs = bench.Headers(c.headers, c.apiKey, c.endpointType)
	errs = append(errs, herrs...)
	if r.tokens, err = tokens.Load(c.tokenizer); err != nil {
		errs = append(errs, fmt.Errorf("--tokenizer: %w", err))
	}
	if r.slos, err = stats.ParseSLOs(c.goodput); err != nil {
		errs = append(errs, err)
	}
	for _, slo := range r.slos {
		if note := sloNote(slo); note != "" {
			r.notes = append(r.notes, note)
		}
	}
	if !(c.cancelRate >= 0 && c.cancelRate <= 100) {
		errs = append(errs, fmt.Errorf("--request-cancellation-rate %v: want a percentage in [0, 100]", c.cancelRate))
	}
	if !(c.cancelDelay >= 0) || math.IsInf(c.cancelDelay, 0) {
		errs = append(errs, fmt.Errorf("--request-cancellation-delay %v: want seconds ≥ 0", c.cancelDelay))
	}
	var werrs []error
	r.worker, r.startAt, werrs = c.workerFlags.resolve()
	return r, append(errs, werrs...)
}

// loadSpec is the spec of a run of class (its label too) to dir, with what the flags give:
// where and how requests go, their seed, cancellations, SLOs and tokenizer, the worker's share
// and start.
func (c *clientFlags) loadSpec(r resolved, class, dir string, info aiperf.RunInfo) *bench.Spec {
	return &bench.Spec{Class: class, Label: class, BaseURL: c.url, Headers: r.headers, Seed: r.seed,
		CancelRate: c.cancelRate / 100, CancelDelay: bench.Seconds(c.cancelDelay), SLOs: r.slos, Tokens: r.tokens, Dir: dir,
		Info: info, Worker: r.worker, StartAt: r.startAt}
}

// runLoad runs a load command's main (benchMain, replayMain) on the process's streams until
// SIGINT or SIGTERM.
func runLoad(main func(context.Context, io.Writer, io.Writer, bool, *flag.FlagSet, []string, func(*bench.Spec, *bench.Result)) (int, error)) func(*flag.FlagSet, []string) (int, error) {
	return func(fs *flag.FlagSet, args []string) (int, error) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return main(ctx, os.Stdout, fs.Output(), term.IsTerminal(int(os.Stderr.Fd())), fs, args, nil)
	}
}

// benchMain is the bench command with its streams as parameters, for in-process tests; hook,
// when set, sees the spec before it runs and the result after (each run's, in a sweep).
// Flags that ask for a sweep or for repeated runs run them, each with its own spec
// (benchFlags.spec with the run's cell), in this process.
func benchMain(ctx context.Context, stdout, stderr io.Writer, terminal bool, fs *flag.FlagSet, args []string, hook func(*bench.Spec, *bench.Result)) (int, error) {
	var b benchFlags
	b.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	b.shapes.visited(fs)
	// Neither a concurrency nor a rate: one request in flight, AIPerf's default, as if
	// --concurrency 1 had been given (the folder, input_config and run_info say so).
	if len(b.sw.conc.values) == 0 && b.arr.Rate == 0 && !b.shapes.UserCentric() { // not given
		fs.Set("concurrency", "1")
	}
	run := func(ctx context.Context, cell *bench.SweepCell) (bench.Result, int, error) {
		spec, code, err := b.spec(fs, args, stderr, cell)
		if err != nil {
			return bench.Result{}, code, err
		}
		return executeMain(ctx, spec, b.cf.apiListen, stdout, stderr, terminal, hook)
	}
	if b.sw.sweeping() {
		return b.sw.run(ctx, &b, stderr, run)
	}
	_, code, err := run(ctx, nil)
	return code, err
}

// benchFlags are bench's flags, parsed once; spec builds a run's spec from them.
type benchFlags struct {
	cf              clientFlags
	arr             gen.ArrivalSpec
	shapes          shapeFlags // conversations, user-centric rate, shared prefixes, datasets (bench_shapes.go)
	sw              sweepFlags // ramps, warmup by duration, timeout, sweeps, repeated runs, timeslices (bench_sweep.go)
	concurrency     *int
	count, warmup   int
	duration, grace float64
	load            workload.Spec // what bench shares with the shadow config: the flags fill it
	seqDist         string
	spin            time.Duration
}

func (b *benchFlags) register(fs *flag.FlagSet) {
	b.cf.register(fs)
	b.arr.RegisterFlags(fs)
	b.shapes.register(fs)
	b.concurrency = b.sw.register(fs)
	fs.IntVar(&b.count, "request-count", 0, "requests to send (default 10 unless --benchmark-duration is set)")
	fs.IntVar(&b.count, "num-requests", 0, "alias of --request-count")
	fs.Float64Var(&b.duration, "benchmark-duration", 0, "seconds to send requests")
	fs.Float64Var(&b.grace, "benchmark-grace-period", 30, "seconds responses may take after --benchmark-duration (inf: wait for all); requests still open then are left out of the results")
	fs.IntVar(&b.warmup, "warmup-request-count", 0, "requests sent first and excluded from the results")
	fs.Float64Var(&b.load.ISL, "isl", workload.DefaultISL, "mean input tokens")
	fs.Float64Var(&b.load.ISL, "synthetic-input-tokens-mean", workload.DefaultISL, "alias of --isl")
	fs.Float64Var(&b.load.ISLStddev, "isl-stddev", 0, "standard deviation of input tokens")
	fs.Float64Var(&b.load.ISLStddev, "synthetic-input-tokens-stddev", 0, "alias of --isl-stddev")
	fs.Float64Var(&b.load.OSL, "osl", 0, "mean output tokens, sent as the output limit (0 = none)")
	fs.Float64Var(&b.load.OSL, "output-tokens-mean", 0, "alias of --osl")
	fs.Float64Var(&b.load.OSLStddev, "osl-stddev", 0, "standard deviation of output tokens")
	fs.Float64Var(&b.load.OSLStddev, "output-tokens-stddev", 0, "alias of --osl-stddev")
	fs.StringVar(&b.seqDist, "seq-dist", "", "a mix of shapes 'ISL[|sd],OSL[|sd]:weight;…' instead of --isl/--osl")
	fs.IntVar(&b.load.Entries, "num-dataset-entries", workload.DefaultEntries, "distinct prompts, built before the run and reused in turn")
	fs.DurationVar(&b.spin, "pacer-spin", -1, "how long before each send the pacer stops sleeping and spins: 0 = timer only, default 1ms up to 1000 req/s and timer only above")
}

// spec checks the parsed flags and builds the run's spec; cell, when set, is the run of a
// sweep or of repeated runs, whose concurrency, seed, folder and warmup replace the flags'.
// The exit code of an error is 2 for wrong flags, 1 otherwise.
func (b *benchFlags) spec(fs *flag.FlagSet, args []string, stderr io.Writer, cell *bench.SweepCell) (*bench.Spec, int, error) {
	cf, load, phases, concurrency, warmup, count := b.cf, b.load, b.sw.phases, *b.concurrency, b.warmup, b.count
	if cell != nil {
		if cell.Level > 0 {
			concurrency = cell.Level
		}
		cf.seed, cf.artifactDir = cell.Seed, cell.Dir
		if cell.NoWarmup {
			warmup, phases.WarmupDuration = 0, 0
		}
	}
	arr, shapes, duration := b.arr, &b.shapes, b.duration
	r, errs := cf.resolve()
	if cf.model == "" {
		errs = append(errs, errors.New("--model is required"))
	}
	cf.fill(&load)
	load.Arrival, load.Rate, load.Smoothness = arr.Pattern, arr.Rate, arr.Smoothness
	pair, err := load.Lengths()
	var lengths workload.Lengths = pair
	if b.seqDist != "" {
		m, err := workload.ParseMix(b.seqDist)
		if err != nil {
			errs = append(errs, err)
		}
		lengths = m
	} else if err != nil {
		errs = append(errs, fmt.Errorf("--isl/--osl: %w", err))
	}
	rate := arr.Rate != 0
	switch {
	case concurrency < 0:
		errs = append(errs, fmt.Errorf("--concurrency %d: must not be negative", concurrency))
	case !rate && concurrency == 0 && !shapes.UserCentric():
		errs = append(errs, errors.New("--concurrency 0 sends nothing: give a concurrency (closed loop) or --request-rate (open loop)"))
	}
	if rate {
		if err := load.Arrivals().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	entries := load.Entries
	if count < 0 || !(duration >= 0) || math.IsInf(duration, 0) || warmup < 0 || entries < 1 {
		errs = append(errs, errors.New("--request-count, --benchmark-duration and --warmup-request-count must not be negative, --benchmark-duration must be finite, --num-dataset-entries must be positive"))
	}
	graceD, err := bench.GracePeriod(b.grace)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, 2, errors.Join(errs...)
	}
	sayNotes(stderr, r.notes)
	if count == 0 && duration == 0 {
		count = 10
	}

	pool, maxBody, err := bench.Prompts(r.tokens, lengths, r.spec, r.seed, entries, count) // sized in --tokenizer tokens
	if err != nil {
		return nil, 1, err
	}
	pick, err := workload.NewSampler(shapes.Sampling, "", len(pool), r.seed)
	if err != nil {
		return nil, 2, err
	}
	build := func(n int) (bench.Request, error) {
		return bench.Request{Path: r.path, Body: pool[pick.Index(n)]}, nil
	}

	mode := shapes.Mode(concurrency, arr.Rate)
	w := r.worker
	share := w.Concurrency(concurrency)
	if concurrency > 0 && share == 0 {
		return nil, 2, fmt.Errorf("--concurrency %d is less than --worker-count %d: worker %d would have no request in flight", concurrency, w.Count, w.Index)
	}
	sched := gen.Config{MaxRequests: w.Requests(count), Duration: bench.Seconds(duration), MaxInFlight: -1,
		SpinThreshold: gen.SpinFor(b.spin, arr.Rate/float64(w.Count)), Concurrency: share}
	if rate {
		if sched.Arrivals, err = w.Arrivals(arr, r.seed, 0xa7); err != nil {
			return nil, 2, err
		}
	}
	dir := cf.artifactDir
	if dir == "" {
		dir = w.Dir(bench.ArtifactDir(cf.model, cf.endpointType, mode))
	}
	spec := cf.loadSpec(r, record.ClassBench, dir, bench.NewRunInfo(commandLine(fs, "bench", args, cell), mode, dir, r.seed))
	spec.Schedule, spec.Grace, spec.GraceFrom, spec.Total, spec.Build = sched, graceD, sched.Duration, sched.MaxRequests, build
	spec.MaxIdle, spec.MaxBody = share, maxBody
	if w.Split() {
		spec.MapN = w.N
	}
	conv := bench.ConversationLoad{Path: r.path, Body: r.spec, Tokens: r.tokens, Seed: r.seed, Entries: entries, Count: count, OpenLoop: rate}
	if err := shapes.Apply(spec, conv, lengths, concurrency, warmup > 0); err != nil {
		return nil, 2, err
	}
	if err := phases.Apply(spec, arr, concurrency, warmup, r.seed); err != nil {
		return nil, 2, err
	}
	return spec, 0, nil
}

// changedSLOs are the goodput metrics whose objective compared ≤ before llmtap followed AIPerf
// (which compares ≥ for every metric where larger is better), with what else changed.
var changedSLOs = map[string]string{
	stats.TagOutputTokenCount: "; output_token_count no longer counts reasoning tokens (output_sequence_length does)",
	stats.TagReasoningTokens:  "",
	stats.TagInputSeqLength:   "",
}

// sloNote says how an objective's meaning changed, "" when it did not.
func sloNote(s stats.SLO) string {
	more, ok := changedSLOs[s.Metric]
	if !ok {
		return ""
	}
	return fmt.Sprintf("note: --goodput %s:%g now means %s (AIPerf's direction for a metric where larger is better; llmtap compared ≤ before)%s",
		s.Metric, s.Threshold, s.String(), more)
}

// sayNotes prints each note once.
func sayNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// commandLine is the parsed command line of fs, as run_info and input_config describe it
// (bench.NewRunInfo), for a sweep's cell when set; secrets stay out of the exports.
func commandLine(fs *flag.FlagSet, name string, args []string, cell *bench.SweepCell) bench.CommandLine {
	c := bench.CommandLine{Command: "llmtap " + name + " " + strings.Join(args, " "), Values: map[string]string{}, Given: map[string]bool{}}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "api-key" && !strings.EqualFold(f.Name, "H") && f.Name != "header" {
			c.Values[f.Name] = f.Value.String()
		}
	})
	fs.Visit(func(f *flag.Flag) { c.Given[f.Name] = true })
	if cell != nil {
		return c.ForCell(*cell)
	}
	return c
}

// workerFlags split one workload across worker processes (docs/workers.md): bench and replay
// share them.
type workerFlags struct {
	worker  bench.Worker
	envErr  error
	startAt string
}

func (w *workerFlags) register(fs *flag.FlagSet) {
	env, err := bench.WorkerFromEnv()
	w.envErr = err
	fs.IntVar(&w.worker.Index, "worker-index", env.Index, "this worker's index, 0 … count-1, in a workload split across --worker-count processes (default $"+bench.EnvWorkerIndex+", else 0)")
	fs.IntVar(&w.worker.Count, "worker-count", env.Count, "worker processes the workload is split across (default $"+bench.EnvWorkerCount+", else 1)")
	fs.StringVar(&w.startAt, "start-at", "", "shared wall-clock start of the profiling phase, RFC 3339 or Unix seconds: every worker waits for it")
}

// resolve validates the flags.
func (w *workerFlags) resolve() (bench.Worker, time.Time, []error) {
	var errs []error
	if w.envErr != nil {
		errs = append(errs, w.envErr)
	}
	if err := w.worker.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--worker-index/--worker-count: %w", err))
	}
	at, err := bench.ParseStartAt(w.startAt)
	if err != nil {
		errs = append(errs, err)
	}
	return w.worker, at, errs
}
