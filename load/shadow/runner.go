package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/record"
)

// States of a runner, as Status reports them.
const (
	StateRunning  = "running"  // sending at its rate
	StateWaiting  = "waiting"  // before start_after, or outside its daily window
	StatePaused   = "paused"   // paused by the guard rails
	StateStopped  = "stopped"  // stopped through the admin API (or never started)
	StateStopping = "stopping" // stopped, waiting for the requests in flight
	StateDone     = "done"     // its duration ended, or its headroom probe finished
)

// tick is how often a runner's supervisor looks at the clock (start_after, window, duration,
// headroom steps, achieved-rate samples).
const tick = 50 * time.Millisecond

// Runner is one named shadow load. Its methods are safe for concurrent use.
type Runner struct {
	name string // cfg.Name, fixed at New: requests read it without the lock (Name)

	mu  sync.Mutex
	cfg Config
	src atomic.Pointer[Source]

	client     *http.Client
	ownsClient bool

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // supervisor and runs

	run      *run // the schedule now running, nil when none
	draining int  // runs ended but still waiting for their requests

	stopped     bool      // by the admin API
	done        bool      // duration over or headroom finished
	pauseReason string    // guard rails; "" = not paused
	adminRate   float64   // rate set through the admin API, 0 = the config's
	began       time.Time // when it was (re)started, for start_after and duration
	sched       string    // scheduleKey of the running schedule

	pauses, resumes atomic.Uint64
	sent, ok, errs  atomic.Int64
	ready           atomic.Bool // Config.Ready returned true once
	inFlight        atomic.Int64
	lastErr         atomic.Pointer[string]
	dropped         atomic.Int64 // of finished runs
	samples         []sample     // (time, sent) every tick, for the achieved rate
	lastLag         gen.Dist

	headroom *probe
	// probe is headroom for the goroutines that build requests, which do not take mu.
	probe atomic.Pointer[probe]
}

// setProbeLocked makes p the runner's headroom probe (nil: none).
func (r *Runner) setProbeLocked(p *probe) {
	r.headroom = p
	r.probe.Store(p)
}

// run is one schedule: a controlled arrival process and the gen.Run sending it.
type run struct {
	ctl      *gen.Controlled
	start    time.Time
	rate     float64 // applied effective rate
	counters atomic.Pointer[gen.Counters]
	done     chan struct{}
}

type sample struct {
	t    time.Time
	sent int64
}

// New validates cfg and returns a runner, not yet started.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Runner{name: cfg.Name, cfg: cfg, stopped: true}
	r.client = cfg.Client
	if r.client == nil {
		r.client = &http.Client{Transport: &http.Transport{
			Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		}}
		r.ownsClient = true
	}
	r.src.Store(cfg.Source)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if cfg.Headroom != nil {
		r.setProbeLocked(newProbe(*cfg.Headroom))
	}
	r.wg.Go(r.supervise)
	return r, nil
}

// Name returns the runner's name. It takes no lock (requests ask it while the proxy classifies
// them, also during a reload's Reconfigure): the name is fixed when the runner is made.
func (r *Runner) Name() string { return r.name }

// Start starts (or restarts) the load: the schedule begins after start_after. Starting a
// running load does nothing; starting one whose last schedule still has requests in flight is
// refused, so that the in-flight ceiling holds.
func (r *Runner) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return errors.New("the shadow load was closed")
	}
	if !r.stopped && !r.done {
		return nil
	}
	if r.draining > 0 || r.run != nil {
		return fmt.Errorf("the shadow load is still stopping: %d requests in flight", r.inFlight.Load())
	}
	r.stopped, r.done, r.began = false, false, time.Now()
	if r.headroom != nil {
		r.setProbeLocked(newProbe(*r.cfg.Headroom))
	}
	r.applyLocked(time.Now())
	return nil
}

// Stop stops sending; requests in flight finish (and are measured) in the background.
func (r *Runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.headroom != nil {
		r.headroom.stop(time.Now()) // its report is final: done, as the state says
	}
	r.applyLocked(time.Now())
}

// Close stops the load, cancels the requests in flight and waits for every goroutine of the
// runner until ctx ends. It is idempotent.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	r.applyLocked(time.Now())
	r.mu.Unlock()
	r.cancel()
	if err := lifecycle.Wait(ctx, &r.wg); err != nil {
		return err
	}
	if r.ownsClient {
		r.client.CloseIdleConnections()
	}
	return nil
}

// Pause pauses the load for the guard rails (see guard.Pausable); it reports whether the
// runner was not paused already.
func (r *Runner) Pause(reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pauseReason != "" {
		return false
	}
	if reason == "" {
		reason = "paused"
	}
	r.pauseReason = reason
	r.pauses.Add(1)
	if r.headroom != nil {
		r.headroom.guardTripped(reason)
	}
	r.applyLocked(time.Now())
	return true
}

// Resume lifts a guard-rail pause; it reports whether the runner was paused.
func (r *Runner) Resume() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pauseReason == "" {
		return false
	}
	r.pauseReason = ""
	r.resumes.Add(1)
	r.applyLocked(time.Now())
	return true
}

// ErrTraceRate is returned by SetRate for a trace load, which is paced by its speedup.
var ErrTraceRate = errors.New("a trace shadow load is paced by its speedup, not a rate")

// SetRate sets the rate (requests per second) until the next config change of the rate. It
// must be positive and at most the load's max_rate (itself at most HardMaxRate).
func (r *Runner) SetRate(rate float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.cfg.Trace != nil:
		return ErrTraceRate
	case r.cfg.Headroom != nil:
		return errors.New("a headroom probe sets its own rate, step by step")
	case !(rate > 0):
		return fmt.Errorf("rate %v: want a positive number of requests per second", rate)
	case rate > r.cfg.MaxRate:
		return fmt.Errorf("rate %v exceeds this load's max_rate %v (hard ceiling %d)", rate, r.cfg.MaxRate, HardMaxRate)
	}
	r.adminRate = rate
	r.applyLocked(time.Now())
	return nil
}

// Reconfigure applies a new config in place: the same runner, the same counters. A change of
// the rate, the URL or the bodies applies at once to the running schedule; a change of the
// arrival process, seed, trace, mode or in-flight bound replaces the schedule (the old one's
// requests in flight finish beside the new one's). A changed rate in the config replaces a
// rate set through the admin API.
func (r *Runner) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Name != r.name {
		return fmt.Errorf("shadow load %q: a runner keeps its name (got %q); add a new load instead", r.name, cfg.Name)
	}
	cfg = cfg.withDefaults()
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cfg
	if cfg.Arrival.Rate != old.Arrival.Rate || cfg.Speedup != old.Speedup {
		r.adminRate = 0
	}
	r.cfg = cfg
	r.src.Store(cfg.Source)
	if cfg.Headroom != nil && (old.Headroom == nil || r.sched != cfg.scheduleKey()) {
		r.setProbeLocked(newProbe(*cfg.Headroom))
	} else if cfg.Headroom == nil {
		r.setProbeLocked(nil)
	}
	if r.run != nil && r.sched != cfg.scheduleKey() {
		r.endRunLocked()
	}
	if (old.StartAfter != cfg.StartAfter || old.Duration != cfg.Duration) && r.done && cfg.Headroom == nil {
		r.done = false // a longer duration lets a finished load go on
	}
	r.applyLocked(time.Now())
	return nil
}

// Config returns the config in force (defaults filled in).
func (r *Runner) Config() Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// wantRateLocked is the rate the schedule should run at now, and the state that explains it.
func (r *Runner) wantRateLocked(now time.Time) (float64, string) {
	switch {
	case r.headroom != nil && r.headroom.isFinished():
		// A probe that ended (its verdict, the guard rails, a stop) is done, paused or stopped
		// alike: its report says so too.
		r.done = true
		return 0, StateDone
	case r.stopped:
		if r.run != nil || r.draining > 0 {
			return 0, StateStopping
		}
		return 0, StateStopped
	case r.done:
		return 0, StateDone
	case r.cfg.Duration > 0 && now.Sub(r.began) >= r.cfg.StartAfter+r.cfg.Duration:
		r.done = true
		return 0, StateDone
	case now.Sub(r.began) < r.cfg.StartAfter || (r.cfg.Ready != nil && !r.ready.Load()):
		return 0, StateWaiting
	case r.cfg.Window != nil && !r.cfg.Window.Contains(now):
		return 0, StateWaiting
	case r.pauseReason != "":
		return 0, StatePaused
	}
	rate := r.cfg.Arrival.Rate
	switch {
	case r.cfg.Trace != nil:
		rate = r.cfg.Speedup
	case r.headroom != nil:
		var finished bool
		rate, finished = r.headroom.rate(now)
		if finished {
			r.done = true
			return 0, StateDone
		}
	case r.adminRate > 0:
		rate = r.adminRate
	}
	if r.cfg.Trace == nil {
		rate = min(rate, r.cfg.MaxRate, HardMaxRate)
	}
	return rate, StateRunning
}

// applyLocked brings the schedule in line with the wanted state: it starts a schedule when
// one should run and none does, ends it when the load is stopped or done, and otherwise sets
// its rate (zero while waiting or paused).
func (r *Runner) applyLocked(now time.Time) {
	rate, state := r.wantRateLocked(now)
	switch state {
	case StateStopped, StateStopping, StateDone:
		if r.run != nil {
			r.endRunLocked()
		}
		return
	}
	if r.ctx.Err() != nil {
		return
	}
	if r.run == nil {
		if err := r.startRunLocked(); err != nil {
			return
		}
	}
	if r.run.rate != rate {
		r.run.ctl.SetRate(rate, now.Sub(r.run.start))
		r.run.rate = rate
	}
}

func (r *Runner) startRunLocked() error {
	base, _, err := r.cfg.base()
	if err != nil {
		return err
	}
	ru := &run{ctl: gen.NewControlled(base, 0), start: time.Now(), done: make(chan struct{})}
	r.run = ru
	r.sched = r.cfg.scheduleKey()
	spin := gen.DefaultSpinThreshold
	if r.cfg.MaxRate > 1000 {
		spin = -1 // above 1,000/s the gaps are shorter than the spin: timer only (see llmtap bench)
	}
	cfg := gen.Config{
		Arrivals: ru.ctl, Request: r.request, Client: r.client, Start: ru.start,
		MaxInFlight: min(r.cfg.MaxInFlight, HardMaxInFlight), SpinThreshold: spin,
		OnDone: r.onDone,
		Progress: func(c gen.Counters) {
			ru.counters.Store(&c)
		},
	}
	if r.cfg.Duration > 0 {
		// The schedule ends exactly at the end of the duration (the supervisor's tick would
		// let an arrival or two past it).
		cfg.Duration = r.began.Add(r.cfg.StartAfter + r.cfg.Duration).Sub(ru.start)
	}
	r.wg.Go(func() {
		c := gen.Run(r.ctx, cfg)
		ru.counters.Store(&c)
		r.mu.Lock()
		r.dropped.Add(c.Dropped)
		r.lastLag = c.Lag
		if r.run == ru {
			// The schedule ended by itself (a trace ran out): the load is done.
			r.run, r.done = nil, true
		} else {
			r.draining--
		}
		r.mu.Unlock()
		close(ru.done)
	})
	return nil
}

// endRunLocked ends the running schedule; its requests in flight finish in the background.
func (r *Runner) endRunLocked() {
	if r.run == nil {
		return
	}
	r.run.ctl.End()
	if c := r.run.counters.Load(); c != nil {
		r.lastLag = c.Lag
	}
	r.run = nil
	r.draining++
}

// request builds request n of the current schedule.
func (r *Runner) request(ctx context.Context, n int) (*http.Request, error) {
	src := r.src.Load()
	body := src.Bodies[n%len(src.Bodies)]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, src.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBuild, err)
	}
	for k, v := range src.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if src.Mark != nil {
		src.Mark(req.Header)
	}
	sent := r.sent.Add(1)
	if p := r.probe.Load(); p != nil {
		// The probe tells its own requests from other shadow loads' by their ids (headroom.go).
		req.Header.Set("X-Request-Id", p.requestID(sent))
	}
	r.inFlight.Add(1)
	return req, nil
}

// errBuild marks a request that could not be built (so was never counted as sent).
var errBuild = errors.New("building the request")

func (r *Runner) onDone(out gen.Outcome) {
	if out.Err != nil || out.Status >= 400 {
		r.errs.Add(1)
		msg := fmt.Sprintf("HTTP %d", out.Status)
		if out.Err != nil {
			msg = out.Err.Error()
		}
		r.lastErr.Store(&msg)
	} else {
		r.ok.Add(1)
	}
	if !errors.Is(out.Err, errBuild) {
		r.inFlight.Add(-1)
	}
}

// supervise moves the schedule along the clock: start_after, the daily window, the duration,
// headroom steps; and samples the sent count for the achieved rate.
func (r *Runner) supervise() {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-tk.C:
			if !r.ready.Load() {
				r.mu.Lock()
				ready := r.cfg.Ready
				r.mu.Unlock()
				if ready == nil || ready() {
					r.ready.Store(true)
				}
			}
			r.mu.Lock()
			r.applyLocked(now)
			r.samples = append(r.samples, sample{now, r.sent.Load()})
			if len(r.samples) > int(achievedSpan/tick)+1 {
				r.samples = r.samples[1:]
			}
			var report *HeadroomReport
			if p := r.headroom; p != nil && !p.reported && p.isFinished() {
				p.reported = true
				h := p.report(now)
				report = &h
			}
			notify := r.cfg.OnHeadroom
			r.mu.Unlock()
			if report != nil && notify != nil {
				notify(*report)
			}
		}
	}
}

// achievedSpan is the span the achieved rate is measured over.
const achievedSpan = 10 * time.Second

// Observe gives the runner one finished request measured by the proxy, for a headroom probe's
// per-step figures. It is cheap when the runner is not a probe.
func (r *Runner) Observe(rec *record.Record) {
	r.mu.Lock()
	p := r.headroom
	r.mu.Unlock()
	if p != nil {
		p.observe(rec)
	}
}
