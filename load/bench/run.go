package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/h1client"
	"github.com/llmtap/llmtap/internal/privatefile"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// recordLinger batches the generator's record pipeline: at thousands of requests per second,
// waking its worker once per millisecond instead of once per record saves CPU the sending needs;
// records (the progress bar's figures, the exports) are not wanted sooner than that.
const recordLinger = time.Millisecond

// Spec is one benchmark or replay, ready to run. The CLI (llmtap bench, llmtap replay) builds
// it from flags; any program can build it.
type Spec struct {
	// Class is the records' traffic class: record.ClassBench or record.ClassReplay.
	Class string
	// Label names the run on the progress line and the API ("bench", "replay").
	Label string
	// BaseURL is the server's base URL (http:// or https://, no trailing slash); each request's
	// path is appended to it.
	BaseURL string
	// Headers are sent with every request (Content-Type and X-Request-Id are set on top).
	Headers http.Header
	// Seed decides which requests are cancelled.
	Seed uint64
	// CancelRate is the fraction of requests cancelled, in [0, 1], CancelDelay after each is
	// fully written (AIPerf's --request-cancellation-rate and -delay).
	CancelRate  float64
	CancelDelay time.Duration
	// RequestTimeout cancels a request still open this long after it was sent (AIPerf's
	// --request-timeout-seconds): the server sees the client go away, and the request is an
	// error of type TimeoutError, as AIPerf counts one. Zero means no timeout.
	RequestTimeout time.Duration
	// SliceDuration, when positive, also writes AIPerf's timeslice exports
	// (profile_export_aiperf_timeslices.json and .csv, timeslice.go): the profiling phase's
	// records in consecutive slices this long, each summarized as the whole run is.
	SliceDuration time.Duration
	// SLOs are the goodput objectives; none: no goodput metrics.
	SLOs []stats.SLO
	// Tokens counts the tokens the server did not report (--tokenizer); nil: o200k_base.
	Tokens tokens.Counter
	// Dir is the artifact folder the exports are written to; it is created.
	Dir string
	// Info describes the run in the JSON export (run_info, input_config).
	Info aiperf.RunInfo

	// Schedule is the load: Arrivals or Concurrency, MaxRequests, Duration (its Request,
	// Client, OnDone and Progress are set by Run).
	Schedule gen.Config
	// Grace is how long after GraceFrom responses in flight may take; < 0: forever.
	Grace time.Duration
	// GraceFrom is when, from the start of the run, the grace period starts: the end of
	// --benchmark-duration, or the last request's time in a replay; 0: no grace period (the run
	// waits for every response).
	GraceFrom time.Duration
	// Total is the number of requests to send, for the progress bar (0 = unknown).
	Total int
	// Build returns request n. Required.
	Build func(n int) (Request, error)
	// MapN turns loadgen's request number into the Build number (replay: head → trace
	// index); nil means the same.
	MapN func(n int) int
	// Next returns the turn that follows request n in its session and the delay after n's
	// response; ok false when n is the last of its session or has none.
	Next func(n int) (turn int, delay time.Duration, ok bool)
	// HoldSessions keeps a closed loop's slot for a whole session (AIPerf's session
	// concurrency: a slot is taken by the first turn and given back after the last): a turn's
	// successor is sent from the slot, rather than beside the loop.
	HoldSessions bool
	// Reply, when set, is given the text of every response (what the server generated, as
	// the engine decodes it, from at most MaxReply bytes) before the request's outcome is
	// reported, so that Next and Build see it: a conversation appends it to its next turn.
	Reply func(n int, text string)
	// OnRecord, when set, is given the record of every request of the profiling phase as the
	// meter finalized it (its usage figures included), with the request's Build number, on
	// the tap's pipeline goroutine: it must not block. A replay fits its prompt sizes to the
	// server's token counts with it.
	OnRecord func(n int, r *record.Record)

	// Warmup is sent first and left out of the results; nil: no warmup.
	Warmup *gen.Config
	// Keep remembers every request sent in Result.Sent (tests).
	Keep bool
	// MaxIdle is the connection pool's size hint (the concurrency); MaxBody the largest request
	// body, when known, to size the connections' write buffers.
	MaxIdle, MaxBody int

	// OnProgress, when set, is given the profiling phase's counts so far (session turns
	// included) about every ProgressEvery (default a second), and once more with final true
	// when the phase has ended; it runs on the scheduler's goroutine and must not block. The
	// CLI draws its progress line with it; the library prints nothing.
	OnProgress    func(c gen.Counters, final bool)
	ProgressEvery time.Duration
	// OnNote, when set, is given what a person watching the run should know that the results
	// do not say: the warmup's counts, a wait for the shared start time, timeslices left out.
	OnNote func(string)
	// Watch, when set, is given the engine of each phase as the phase starts (the warmup's, then
	// the profiling's), so that a surface can show the run's figures live: the CLI serves the
	// Connect API on --api-listen with it. The library itself serves nothing.
	Watch func(*tap.Tap)

	// Worker is this process's share of a workload split across processes (worker.go). Run
	// only labels the exports with it (worker_id, the snapshot); the caller builds the share
	// (Schedule, MapN) with Worker's methods.
	Worker Worker
	// StartAt, when set, is the shared wall-clock time the profiling phase starts at (after
	// the warmup): every worker of a split workload waits for it, so their schedules line up.
	// A time already past starts at once, and the lateness is given to OnNote.
	StartAt time.Time
}

// Request is one request ready to send: where, what, and its session.
type Request struct {
	Path    string
	Body    []byte
	Session string
	// Turn is the request's place in its session, from 1; 0 when not known. The export's
	// turn_index is Turn − 1.
	Turn int
	// SessionNum, when set, is the index of the request's session among the run's sessions,
	// from 0, the same for all its turns: AIPerf's session_num. Unset, a request of a session
	// gets its session's place in the order sessions were first sent, and a request without a
	// session its request number.
	SessionNum *int
}

// Result is what a run produced.
type Result struct {
	// Summary is the aggregator's summary of the profiling phase, every group.
	Summary stats.Summary
	// Export is profile_export_aiperf.json's content.
	Export aiperf.Export
	// Generator is the load generator's self-check (also in Export).
	Generator aiperf.Generator
	// Counters are the scheduler's counts, session turns included.
	Counters gen.Counters
	// Files are the exports written.
	Files []string
	// Sent lists every request sent, when Spec.Keep.
	Sent []SentRequest
	// Lines is how many lines profile_export.jsonl has.
	Lines int
	// Duration is the profiling phase's wall time.
	Duration time.Duration
}

// Failed is the error of a run in which no request completed (with the first failure's count
// and message when requests failed), nil when one did.
func (r *Result) Failed() error {
	switch {
	case r.Counters.Completed > 0:
		return nil
	case len(r.Export.Errors) > 0:
		return fmt.Errorf("no request completed: %d failed with %s", r.Export.Errors[0].Count, r.Export.Errors[0].Details.Message)
	}
	return errors.New("no request completed")
}

// transport is the generator's HTTP client transport: plain-HTTP/1.1 requests go through
// h1client, which does each exchange on the sending goroutine over a pool of kept-alive
// connections (BenchmarkRoundTrip there, -cpu 1: 47–67 against net/http's 68–111 µs of CPU per
// loopback exchange, client and server together); https and anything else go through
// net/http's Transport.
func (s *Spec) transport() *h1client.Transport {
	// Keep every connection for reuse, as vegeta does (its default is 10,000): an open loop that
	// falls behind has many requests in flight, and a capped idle pool then closes connections
	// only to dial new ones, which costs more than the requests and collapses the rate.
	idle := max(s.MaxIdle, 10000)
	// A long prompt's body goes out in a few large writes rather than many 4 KB ones; small
	// bodies keep small buffers, which every new connection allocates and clears.
	wbuf := 64 << 10
	if s.MaxBody > 0 {
		wbuf = min(max(s.MaxBody+1<<10, 4<<10), 64<<10)
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

// Run runs the warmup (if any) and the profiling phase of spec, then writes the exports
// (profile_export.jsonl, profile_export_aiperf.json and .csv) into spec.Dir. A run that ctx
// ends early still writes what it measured, with was_cancelled set.
func Run(ctx context.Context, spec Spec) (Result, error) {
	s := &spec
	var res Result
	if s.Build == nil {
		return res, errors.New("loadtest: Spec.Build is required")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return res, fmt.Errorf("creating the artifact folder: %w", err)
	}
	base := s.transport()
	defer base.Close()
	watch := func(tp *tap.Tap) {
		if s.Watch != nil {
			s.Watch(tp)
		}
	}

	if s.Warmup != nil {
		tp := tap.New(tap.Options{Queue: 1 << 16, Linger: recordLinger, Tokens: s.Tokens})
		watch(tp)
		col := newCollector("warmup-", "warmup", nil, nil)
		snd := s.sender(base, tp, col)
		cfg := *s.Warmup
		cfg.Request, cfg.Client, cfg.OnDone = snd.loadgenRequest, snd.client, col.done
		c := gen.Run(ctx, cfg)
		tp.Flush()
		_ = tp.Close(context.Background())
		s.note("warmup: %d requests, %d errors (excluded from the results)", c.Completed+c.Errors, c.Errors)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}

	if err := s.waitForStart(ctx); err != nil {
		return res, err
	}
	jp := filepath.Join(s.Dir, aiperf.LinesFile)
	jf, err := privatefile.Create(jp)
	if err != nil {
		return res, err
	}
	defer jf.Close()
	tp := tap.New(tap.Options{Queue: 1 << 16, Linger: recordLinger, Stats: stats.Options{SLOs: s.SLOs}, Tokens: s.Tokens})
	defer tp.Close(context.Background()) //nolint:errcheck // nothing of it drains
	watch(tp)
	col := newCollector(s.Class+"-"+strconv.FormatInt(time.Now().UnixNano()%1e9, 36)+"-", "profiling", jf, s.SLOs)
	col.keep = s.Keep
	col.onRecord = s.OnRecord
	if s.SliceDuration > 0 {
		col.slices = newSlicer(s.SliceDuration, s.SLOs)
	}
	if s.Worker.Split() {
		col.worker = llmtapWorker + "-" + strconv.Itoa(s.Worker.Index)
	}
	snd := s.sender(base, tp, col)

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	if d := s.GraceFrom; d > 0 && s.Grace >= 0 {
		// AIPerf's grace period: responses still in flight this long after the end are cut,
		// and left out of the results. A negative grace is an infinite one: no cut.
		t := time.AfterFunc(d+s.Grace, func() { col.cut.Store(true); cancelRun() })
		defer t.Stop()
	}

	// Sessions: a turn's successor is sent after its response ends, from a goroutine of its
	// own, so the open-loop schedule of first turns never waits for a conversation.
	var sessions sync.WaitGroup
	var sSent, sDone, sErrs, sFlight atomic.Int64
	origin := time.Now()
	var onDone func(out gen.Outcome)
	onDone = func(out gen.Outcome) {
		col.done(out)
		if s.Next == nil {
			return
		}
		nx, delay, ok := s.Next(out.N)
		// Past the run's duration a session sends no more turns (AIPerf issues no credit then).
		over := s.Schedule.Duration > 0 && time.Since(origin) >= s.Schedule.Duration
		if !ok || over || runCtx.Err() != nil {
			return
		}
		at := time.Now().Add(delay)
		turn := func() {
			pacer := gen.NewPacer(gen.DefaultSpinThreshold)
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
		}
		if s.HoldSessions {
			turn() // on the loop's goroutine: the slot stays taken until the session ends
			return
		}
		sessions.Go(turn)
	}
	// The counts with the session turns sent beside the schedule.
	withSessions := func(c gen.Counters) gen.Counters {
		c.Sent += sSent.Load()
		c.Scheduled += sSent.Load()
		c.Completed += sDone.Load()
		c.Errors += sErrs.Load()
		c.InFlight += sFlight.Load()
		return c
	}
	cfg := s.Schedule
	cfg.Request, cfg.Client = snd.loadgenRequest, snd.client
	if s.MapN != nil {
		cfg.Request = func(ctx context.Context, n int) (*http.Request, error) {
			intended, _ := gen.IntendedTime(ctx)
			return snd.request(ctx, s.MapN(n), intended)
		}
		cfg.OnDone = func(out gen.Outcome) { out.N = s.MapN(out.N); onDone(out) }
	} else {
		cfg.OnDone = onDone
	}
	if s.OnProgress != nil {
		cfg.Progress = func(c gen.Counters) { s.OnProgress(withSessions(c), false) }
		cfg.ProgressEvery = cmp.Or(s.ProgressEvery, time.Second)
	}

	cpu0, wall0 := cpuTime(), time.Now()
	counters := gen.Run(runCtx, cfg)
	sessions.Wait()
	wall := time.Since(wall0)
	cpu := 0.0
	if c := cpuTime(); c > 0 && wall > 0 {
		cpu = float64(c-cpu0) / float64(wall)
	}
	counters = withSessions(counters)
	if s.OnProgress != nil {
		s.OnProgress(counters, true)
	}

	tp.Flush()
	if err := col.flush(); err != nil {
		return res, fmt.Errorf("writing %s: %w", jp, err)
	}
	if err := jf.Close(); err != nil {
		return res, fmt.Errorf("writing %s: %w", jp, err)
	}
	res.Counters, res.Sent, res.Lines, res.Duration = counters, col.sent, col.lines, wall
	res.Generator = col.report(counters, cpu, tp)
	res.Summary = col.agg.Summary()
	others := aiperf.ClassGroups(res.Summary, s.Class)
	col.mu.Lock()
	errs, unfinished := col.errs.Summary(), col.unfinished
	col.mu.Unlock()
	res.Export = aiperf.Export{Group: stats.Combine(others, len(s.SLOs) > 0), Others: others, Generator: res.Generator,
		Info: s.Info, Start: wall0, End: wall0.Add(wall), Cancelled: ctx.Err() != nil, SLOs: s.SLOs,
		Errors: errs, Unfinished: unfinished}
	_, res.Export.ErrorISL = col.errISL.Snapshot(time.Now())
	files, err := aiperf.WriteExports(s.Dir, res.Export)
	if err != nil {
		return res, err
	}
	snap, err := s.snapshot(res.Export, col)
	if err != nil {
		return res, err
	}
	sp, err := writeSnapshot(s.Dir, snap)
	if err != nil {
		return res, err
	}
	res.Files = append(files, jp, sp)
	ip, err := col.in.Write(s.Dir)
	if err != nil {
		return res, err
	}
	res.Files = append(res.Files, ip)
	if sl := col.slices; sl != nil {
		if sl.dropped > 0 {
			s.note("timeslices: %d requests started after the %d-th slice and are left out of %s", sl.dropped, MaxTimeslices, aiperf.TimeslicesJSON)
		}
		tf, err := aiperf.WriteTimeslices(s.Dir, sl.slices(s.Class), res.Export.Info.Input)
		if err != nil {
			return res, err
		}
		res.Files = append(res.Files, tf...)
	}
	return res, nil
}

func (s *Spec) sender(base http.RoundTripper, tp *tap.Tap, col *collector) *sender {
	snd := newSender(base, tp, s.Class, col)
	snd.baseURL, snd.headers, snd.build = s.BaseURL, s.Headers, s.Build
	snd.cancelRate, snd.cancelDelay, snd.seed = s.CancelRate, s.CancelDelay, s.Seed
	if s.Reply != nil {
		snd.client.Transport = &replyTransport{base: snd.client.Transport, reply: s.Reply}
		snd.reply = true
	}
	snd.timeout = s.RequestTimeout
	return snd
}

// waitForStart waits for StartAt, if set and still ahead.
func (s *Spec) waitForStart(ctx context.Context) error {
	if s.StartAt.IsZero() {
		return nil
	}
	d := time.Until(s.StartAt)
	if d <= 0 {
		s.note("%s: the shared start time %s passed %v ago; starting now", s.Label, s.StartAt.UTC().Format(time.RFC3339Nano), (-d).Round(time.Millisecond))
		return nil
	}
	s.note("%s: waiting %v for the shared start time %s", s.Label, d.Round(time.Millisecond), s.StartAt.UTC().Format(time.RFC3339Nano))
	return Sleep(ctx, d)
}

// note gives OnNote a note, when it is set.
func (s *Spec) note(format string, args ...any) {
	if s.OnNote != nil {
		s.OnNote(fmt.Sprintf(format, args...))
	}
}

// Sleep waits d, or until ctx is done (then its error); d ≤ 0 returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
