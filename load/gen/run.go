package gen

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
)

// Config is one run: open loop when Arrivals is set, closed loop when only Concurrency is.
type Config struct {
	// Arrivals is the schedule of an open-loop run: each request is sent at its intended time
	// whatever happened to the earlier ones. A generator that falls behind (a GC pause, a
	// descheduled process) sends the overdue requests at once rather than re-anchoring the
	// schedule, so the achieved rate stays the intended one and the lateness shows in Lag.
	Arrivals Arrivals
	// Concurrency, without Arrivals, runs closed loop: that many workers each send a request,
	// wait for the whole response and send the next at once (AIPerf's --concurrency alone).
	// With Arrivals it is AIPerf's ceiling on a rate: it sets MaxInFlight to Concurrency and
	// Queue to true. Zero without Arrivals means there is nothing to run.
	Concurrency int
	// ConcurrencyRamp opens the Concurrency slots one at a time, slot k at
	// ConcurrencyStep(k, Concurrency, ConcurrencyRamp), as AIPerf's
	// --concurrency-ramp-duration does; zero opens them all at the start.
	ConcurrencyRamp time.Duration
	// Request builds each request. Client sends it (http.DefaultClient when nil).
	Request Request
	Client  *http.Client
	// Duration ends the schedule (or stops closed-loop workers taking new requests); requests
	// in flight or queued are then awaited. Zero means no time limit.
	Duration time.Duration
	// MaxRequests ends the schedule after this many requests (0 = no limit).
	MaxRequests int
	// MaxInFlight bounds concurrent requests in open loop. An arrival that finds the bound
	// reached is dropped and counted, never delaying the schedule, unless Queue is set.
	// Zero means 1024; negative means no bound (one goroutine per request however slow the
	// server).
	MaxInFlight int
	// Queue makes an arrival that finds MaxInFlight reached wait for a slot instead of being
	// dropped; queued requests are sent in schedule order and their wait is reported as
	// QueueWait. The schedule itself still never waits.
	Queue bool
	// MaxQueue bounds how many requests may wait at once when Queue is set, to bound memory;
	// arrivals beyond it are dropped and counted. Zero means 65,536.
	MaxQueue int
	// SpinThreshold is how long before each intended time the pacer stops sleeping and spins
	// (see [Pacer]). Zero means [DefaultSpinThreshold]; negative means timer only.
	SpinThreshold time.Duration
	// Start, when set, is the run's time origin, which every intended time is an offset from;
	// zero means the moment Run is called. A caller that changes an [Adjustable] schedule
	// while the run goes computes its offsets from the same origin.
	Start time.Time
	// OnDone, when set, is called with every finished request's timeline and result, from the
	// goroutine that sent it: it must be safe for concurrent use, and should be quick.
	OnDone func(Outcome)
	// Progress, when set, is called about every ProgressEvery (default 250 ms) with the
	// counters so far, from a goroutine of its own.
	Progress      func(Counters)
	ProgressEvery time.Duration
}

// Counters are a run's running totals.
type Counters struct {
	Elapsed time.Duration
	// Scheduled counts requests the schedule released (in closed loop: that workers took up).
	// Each one is then sent, dropped, queued, or counted as an error if Request failed.
	Scheduled int64
	Sent      int64
	// Completed counts responses read in full with a status below 400; Errors counts requests
	// that could not be built, failed, or got a status of 400 or more.
	Completed int64
	Errors    int64
	// Dropped counts scheduled requests never sent: refused at the in-flight bound or by a
	// full queue, or still queued when the run's context ended.
	Dropped  int64
	InFlight int64
	// Queued is how many requests are waiting for an in-flight slot now.
	Queued int64
	// Lag is the schedule lag (actual − intended release time) over every released request;
	// empty in closed loop, which has no schedule.
	Lag Dist
	// QueueWait is the wait for an in-flight slot over every sent request, when Queue is set.
	QueueWait Dist
}

// runner is the state of one Run.
type runner struct {
	cfg   Config
	start time.Time

	scheduled, sent, completed, errs, dropped, inFlight, queued atomic.Int64

	lag, wait *durationHist
	q         *slotQueue // nil unless queueing
	wg        sync.WaitGroup
}

// Run executes the run and returns once every request it sent has finished. It stops early,
// abandoning queued requests and cancelling those in flight, when ctx is done.
func Run(ctx context.Context, cfg Config) Counters {
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Arrivals != nil && cfg.Concurrency > 0 {
		cfg.MaxInFlight, cfg.Queue = cfg.Concurrency, true
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 1 << 16
	}
	if cfg.SpinThreshold == 0 {
		cfg.SpinThreshold = DefaultSpinThreshold
	}
	r := &runner{cfg: cfg, lag: newDurationHist(), wait: newDurationHist()}
	if cfg.Queue && cfg.MaxInFlight > 0 {
		slots := cfg.MaxInFlight
		if cfg.ConcurrencyRamp > 0 {
			slots = 1 // openLoop opens the others as the ramp goes
		}
		r.q = newSlotQueue(slots, cfg.MaxQueue)
	}
	r.start = cfg.Start
	if r.start.IsZero() {
		r.start = time.Now()
	}
	var progress *lifecycle.Loop
	if cfg.Progress != nil {
		progress = lifecycle.Go(r.reportProgress)
	}
	switch {
	case cfg.Arrivals != nil:
		r.openLoop(ctx)
	case cfg.Concurrency > 0:
		r.closedLoop(ctx)
	}
	r.wg.Wait()
	_ = progress.Close(context.Background())
	return r.snapshot()
}

func (r *runner) snapshot() Counters {
	return Counters{
		Elapsed: time.Since(r.start), Scheduled: r.scheduled.Load(), Sent: r.sent.Load(),
		Completed: r.completed.Load(), Errors: r.errs.Load(), Dropped: r.dropped.Load(),
		InFlight: r.inFlight.Load(), Queued: r.queued.Load(),
		Lag: r.lag.dist(), QueueWait: r.wait.dist(),
	}
}

// reportProgress calls Progress every ProgressEvery (default 250 ms) until ctx ends.
func (r *runner) reportProgress(ctx context.Context) error {
	every := r.cfg.ProgressEvery
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			r.cfg.Progress(r.snapshot())
		case <-ctx.Done():
			return nil
		}
	}
}

// openLoop releases each request at its intended time and hands it off without waiting for it.
func (r *runner) openLoop(ctx context.Context) {
	pacer := NewPacer(r.cfg.SpinThreshold)
	w := newWorkers(&r.wg)
	defer w.stop()
	if r.q != nil && r.cfg.ConcurrencyRamp > 0 {
		stop := make(chan struct{})
		defer close(stop)
		r.wg.Go(func() { r.openSlots(ctx, w, stop) })
	}
	adj, _ := r.cfg.Arrivals.(Adjustable)
	var changed <-chan struct{}
	for n := 0; r.cfg.MaxRequests <= 0 || n < r.cfg.MaxRequests; n++ {
		if adj != nil {
			changed = adj.Changed() // before Next, so that no change between them is missed
		}
		at := r.cfg.Arrivals.Next()
		for {
			// A parked arrival (an Adjustable schedule at rate zero) waits for a change even
			// past the Duration: it has no time yet.
			if at == End || (r.cfg.Duration > 0 && at >= r.cfg.Duration && at != Parked) {
				return
			}
			err := pacer.WaitOr(ctx, r.start.Add(at), changed)
			if err == ErrWoken {
				// The schedule changed while this arrival was pending: ask for its new time.
				changed = adj.Changed()
				at = adj.Retime()
				continue
			}
			if err != nil || ctx.Err() != nil {
				return
			}
			break
		}
		st := Stamp{N: n, Intended: at, Released: time.Since(r.start)}
		r.lag.record(st.Lag())
		r.scheduled.Add(1)
		switch {
		case r.q != nil:
			switch r.q.admit(st) {
			case admitted:
				w.run(func() { r.sendQueued(ctx, st) })
			case queued:
				r.queued.Add(1)
			case refused:
				r.dropped.Add(1)
			}
		case r.cfg.MaxInFlight > 0 && r.inFlight.Load() >= int64(r.cfg.MaxInFlight):
			r.dropped.Add(1)
		default:
			// Counted here rather than in the goroutine, so the next arrival's check is exact.
			r.inFlight.Add(1)
			w.run(func() {
				defer r.inFlight.Add(-1)
				r.do(ctx, st)
			})
		}
	}
}

// sendQueued sends st with the slot it was admitted to, then keeps the slot busy with queued
// requests, oldest first, until none is left.
func (r *runner) sendQueued(ctx context.Context, st Stamp) {
	for {
		r.inFlight.Add(1)
		r.do(ctx, st)
		r.inFlight.Add(-1)
		var ok bool
		for {
			if st, ok = r.q.next(); !ok {
				return
			}
			r.queued.Add(-1)
			if ctx.Err() == nil {
				break
			}
			r.dropped.Add(1) // the run was cancelled while it waited
		}
	}
}

// closedLoop runs Concurrency workers, each sending its next request as soon as its last one
// is done, until MaxRequests, Duration or ctx ends the run. No more workers start than there
// are requests to send, and none once ctx is done.
func (r *runner) closedLoop(ctx context.Context) {
	var next atomic.Int64
	workers := r.cfg.Concurrency
	if r.cfg.MaxRequests > 0 {
		workers = min(workers, r.cfg.MaxRequests)
	}
	for k := range workers {
		if ctx.Err() != nil {
			break
		}
		r.wg.Go(func() {
			if !r.waitSlot(ctx, k) {
				return
			}
			for {
				n := int(next.Add(1) - 1)
				if r.cfg.MaxRequests > 0 && n >= r.cfg.MaxRequests || ctx.Err() != nil {
					return
				}
				now := time.Since(r.start)
				if r.cfg.Duration > 0 && now >= r.cfg.Duration {
					return
				}
				r.scheduled.Add(1)
				r.inFlight.Add(1)
				r.do(ctx, Stamp{N: n, Intended: now, Released: now})
				r.inFlight.Add(-1)
			}
		})
	}
}

// do builds, sends and reads one request, stamping and counting it.
func (r *runner) do(ctx context.Context, st Stamp) {
	st.Sent = time.Since(r.start)
	if r.q != nil {
		r.wait.record(st.QueueWait())
	}
	out := Outcome{Stamp: st}
	defer func() {
		out.Done = time.Since(r.start)
		if out.Err != nil || out.Status >= 400 {
			r.errs.Add(1)
		} else {
			r.completed.Add(1)
		}
		if r.cfg.OnDone != nil {
			r.cfg.OnDone(out)
		}
	}()
	req, err := r.cfg.Request(context.WithValue(ctx, intendedKey{}, r.start.Add(st.Intended)), st.N)
	if err != nil {
		out.Err = err
		return
	}
	r.sent.Add(1)
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		out.Err = err
		return
	}
	out.Status = resp.StatusCode
	_, out.Err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
