package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/internal/h1client"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// recordLinger batches the generator's record pipeline: at thousands of requests per second,
// waking its worker once per millisecond instead of once per record saves CPU the sending needs;
// records (the progress bar's figures, the exports) are not wanted sooner than that.
const recordLinger = time.Millisecond

// execSpec is one benchmark or replay, ready to run.
type execSpec struct {
	class       string // record class: bench or replay
	label       string // progress label
	baseURL     string
	headers     http.Header
	seed        uint64
	cancelRate  float64
	cancelDelay time.Duration
	slos        []stats.SLO
	dir         string // artifact folder
	info        runInfo

	schedule loadgen.Config // Arrivals or Concurrency, MaxRequests, Duration
	grace    time.Duration  // after graceFrom, how long responses in flight may take; < 0: forever
	// graceFrom is when, from the start of the run, the grace period starts: the end of
	// --benchmark-duration, or the last request's time in a replay; 0: no grace period (the run
	// waits for every response).
	graceFrom time.Duration
	total     int // requests to send, for the progress bar (0 = unknown)
	build     func(n int) (built, error)
	// mapN turns loadgen's request number into the build number (replay: head → trace
	// index); nil means the same.
	mapN func(n int) int
	// next returns the turn that follows request n in its session and the delay after n's
	// response; ok false when n is the last of its session or has none.
	next func(n int) (turn int, delay time.Duration, ok bool)

	warmup  *loadgen.Config // nil: no warmup
	keep    bool            // tests: remember what was sent
	maxIdle int
	maxBody int // the largest request body, when known, to size the connections' write buffers

	stderr   io.Writer
	terminal bool
	// apiListen is where to serve the Connect API during the run (bench_api.go); empty: nowhere.
	apiListen string
}

// execResult is what a run produced.
type execResult struct {
	summary  stats.Summary
	export   exportSummary
	gen      generatorReport
	counters loadgen.Counters
	files    []string
	sent     []sentRequest
	lines    int
}

// transport is the generator's HTTP client transport: plain-HTTP/1.1 requests go through
// h1client, which does each exchange on the sending goroutine over a pool of kept-alive
// connections (BenchmarkRoundTrip there, -cpu 1: 47–67 against net/http's 68–111 µs of CPU per
// loopback exchange, client and server together); https and anything else go through
// net/http's Transport.
func (s *execSpec) transport() *h1client.Transport {
	// Keep every connection for reuse, as vegeta does (its default is 10,000): an open loop that
	// falls behind has many requests in flight, and a capped idle pool then closes connections
	// only to dial new ones, which costs more than the requests and collapses the rate.
	idle := max(s.maxIdle, 10000)
	// A long prompt's body goes out in a few large writes rather than many 4 KB ones; small
	// bodies keep small buffers, which every new connection allocates and clears.
	wbuf := 64 << 10
	if s.maxBody > 0 {
		wbuf = min(max(s.maxBody+1<<10, 4<<10), 64<<10)
	}
	return &h1client.Transport{
		MaxIdlePerHost:  idle,
		IdleTimeout:     90 * time.Second,
		WriteBufferSize: wbuf,
		ReadBufferSize:  16 << 10,
		Fallback: &http.Transport{
			Proxy:               nil, // a benchmark measures the server, never a proxy from the environment
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
			WriteBufferSize:     wbuf,
			ReadBufferSize:      16 << 10,
		},
	}
}

// execute runs the warmup (if any) and the profiling phase, then writes the exports and the
// console report to stdout.
func execute(ctx context.Context, s *execSpec, stdout io.Writer) (execResult, error) {
	var res execResult
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return res, fmt.Errorf("creating the artifact folder: %w", err)
	}
	base := s.transport()
	defer base.Close()
	api, err := startBenchAPI(s.apiListen, s.label, s.stderr)
	if err != nil {
		return res, err
	}
	defer api.Close()

	if s.warmup != nil {
		tp := tap.New(tap.Options{Queue: 1 << 16, Linger: recordLinger})
		api.setTap(tp)
		col := newCollector("warmup-", "warmup", nil, nil)
		snd := s.sender(base, tp, col)
		cfg := *s.warmup
		cfg.Request, cfg.Client, cfg.OnDone = snd.loadgenRequest, snd.client, col.done
		c := loadgen.Run(ctx, cfg)
		tp.Flush()
		tp.Close()
		fmt.Fprintf(s.stderr, "warmup: %d requests, %d errors (excluded from the results)\n", c.Completed+c.Errors, c.Errors)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}

	jp := filepath.Join(s.dir, "profile_export.jsonl")
	jf, err := createFile(jp)
	if err != nil {
		return res, err
	}
	defer jf.Close()
	tp := tap.New(tap.Options{Queue: 1 << 16, Linger: recordLinger, Stats: stats.Options{SLOs: s.slos}})
	defer tp.Close()
	api.setTap(tp)
	col := newCollector(s.class+"-"+strconv.FormatInt(time.Now().UnixNano()%1e9, 36)+"-", "profiling", jf, s.slos)
	col.keep = s.keep
	snd := s.sender(base, tp, col)

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	if d := s.graceFrom; d > 0 && s.grace >= 0 {
		// AIPerf's grace period: responses still in flight this long after the end are cut,
		// and left out of the results. A negative grace is an infinite one: no cut.
		t := time.AfterFunc(d+s.grace, func() { col.cut.Store(true); cancelRun() })
		defer t.Stop()
	}

	// Sessions: a turn's successor is sent after its response ends, from a goroutine of its
	// own, so the open-loop schedule of first turns never waits for a conversation.
	var sessions sync.WaitGroup
	var sSent, sDone, sErrs, sFlight atomic.Int64
	origin := time.Now()
	var onDone func(out loadgen.Outcome)
	onDone = func(out loadgen.Outcome) {
		col.done(out)
		if s.next == nil {
			return
		}
		nx, delay, ok := s.next(out.N)
		if !ok || runCtx.Err() != nil {
			return
		}
		at := time.Now().Add(delay)
		sessions.Go(func() {
			pacer := loadgen.NewPacer(loadgen.DefaultSpinThreshold)
			sSent.Add(1)
			sFlight.Add(1)
			o := snd.sendAt(runCtx, pacer, origin, nx, at)
			sFlight.Add(-1)
			if o.Err != nil || o.Status >= 400 {
				sErrs.Add(1)
			} else {
				sDone.Add(1)
			}
			onDone(o)
		})
	}
	prog := &progress{w: s.stderr, terminal: s.terminal, label: s.label, total: s.total, duration: s.schedule.Duration,
		extra: func() (int64, int64, int64, int64) { return sSent.Load(), sDone.Load(), sErrs.Load(), sFlight.Load() }}
	cfg := s.schedule
	cfg.Request, cfg.Client = snd.loadgenRequest, snd.client
	if s.mapN != nil {
		cfg.Request = func(ctx context.Context, n int) (*http.Request, error) {
			intended, _ := loadgen.IntendedTime(ctx)
			return snd.request(ctx, s.mapN(n), intended)
		}
		cfg.OnDone = func(out loadgen.Outcome) { out.N = s.mapN(out.N); onDone(out) }
	} else {
		cfg.OnDone = onDone
	}
	cfg.Progress, cfg.ProgressEvery = prog.print, prog.every()

	cpu0, wall0 := cpuTime(), time.Now()
	counters := loadgen.Run(runCtx, cfg)
	sessions.Wait()
	wall := time.Since(wall0)
	cpu := 0.0
	if c := cpuTime(); c > 0 && wall > 0 {
		cpu = float64(c-cpu0) / float64(wall)
	}
	counters.Sent += sSent.Load()
	counters.Scheduled += sSent.Load()
	counters.Completed += sDone.Load()
	counters.Errors += sErrs.Load()
	prog.finish(counters)

	tp.Flush()
	if err := col.flush(); err != nil {
		return res, fmt.Errorf("writing %s: %w", jp, err)
	}
	if err := jf.Close(); err != nil {
		return res, fmt.Errorf("writing %s: %w", jp, err)
	}
	res.counters, res.sent, res.lines = counters, col.sent, col.lines
	res.gen = col.report(counters, cpu, tp)
	res.summary = col.agg.Summary()
	others := classGroups(res.summary, s.class)
	col.mu.Lock()
	errs, unfinished := col.errs.summary(), col.unfinished
	col.mu.Unlock()
	res.export = exportSummary{Group: stats.Combine(others, len(s.slos) > 0), Others: others, Generator: res.gen,
		Info: s.info, Start: wall0, End: wall0.Add(wall), Cancelled: ctx.Err() != nil, SLOs: s.slos,
		Errors: errs, Unfinished: unfinished}
	files, err := writeExports(s.dir, res.export)
	if err != nil {
		return res, err
	}
	res.files = append(files, jp)
	if err := writeConsole(stdout, res.export, wall, res.files); err != nil {
		return res, err
	}
	return res, nil
}

func (s *execSpec) sender(base http.RoundTripper, tp *tap.Tap, col *collector) *sender {
	snd := newSender(base, tp, s.class, col)
	snd.baseURL, snd.headers, snd.build = s.baseURL, s.headers, s.build
	snd.cancelRate, snd.cancelDelay, snd.seed = s.cancelRate, s.cancelDelay, s.seed
	return snd
}

// executeMain runs a prepared spec for a command and turns the outcome into its exit code;
// hook (tests only) sees the spec before the run and the result after it.
func executeMain(ctx context.Context, spec *execSpec, stdout io.Writer, hook func(*execSpec, *execResult)) (int, error) {
	if hook != nil {
		hook(spec, nil)
	}
	// The generator allocates per request (the client's buffers, the records) and keeps little:
	// collecting four times less often costs a few MiB and leaves the cores to sending. GOGC in
	// the environment still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	res, err := execute(ctx, spec, stdout)
	if hook != nil {
		hook(spec, &res)
	}
	if err != nil {
		return 1, err
	}
	if res.counters.Completed == 0 {
		if errs := res.export.Errors; len(errs) > 0 {
			return 1, fmt.Errorf("no request completed: %d failed with %s", errs[0].Count, errs[0].Details.Message)
		}
		return 1, errors.New("no request completed")
	}
	return 0, nil
}
