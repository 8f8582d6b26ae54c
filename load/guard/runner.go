package guard

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Runner runs one Guard in a goroutine of its own: it evaluates it on a ticker (a twentieth
// of the window, between 20 ms and 1 s) and applies each change of state to its Targets. A
// Configure with the settings it already runs keeps its guard (and the guard's window);
// other settings replace the guard by a new, clear one; Close stops it. Its methods are safe
// for concurrent use; Observe takes no lock.
type Runner struct {
	// Targets are what the guard pauses and resumes. Required.
	Targets *Targets
	// OnChange, when set, is called from the runner's goroutine after each change of state
	// was applied, with the names of the targets whose state changed.
	OnChange func(st State, changed []string)

	mu  sync.Mutex // held while (re)configuring
	cur atomic.Pointer[loop]
}

// loop is one guard with its goroutine.
type loop struct {
	cfg   Config
	g     *Guard
	run   *lifecycle.Loop
	state atomic.Pointer[State]
}

// Configure keeps the running guard when its settings are cfg, and replaces it otherwise;
// what the replaced guard paused is resumed unless the new one trips again.
func (r *Runner) Configure(cfg Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if old != nil && reflect.DeepEqual(old.cfg, cfg) {
		return
	}
	l := &loop{cfg: cfg, g: New(cfg)}
	st, _ := l.g.Evaluate(time.Now())
	l.state.Store(&st)
	if old != nil {
		_ = old.run.Close(context.Background()) // a tick's work is short
		if s := old.state.Load(); s != nil && s.Tripped {
			// A new guard starts clear; what the old one paused is resumed by its first
			// evaluation unless a limit is still crossed.
			r.Targets.Apply(false, "")
		}
	}
	r.cur.Store(l)
	l.run = lifecycle.Go(func(ctx context.Context) error { return l.loop(ctx, r) })
}

// Close stops the guard's goroutine, waiting for it until ctx ends, and resumes what it
// paused. It is idempotent; a later Configure starts a guard again.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.cur.Swap(nil)
	if l == nil {
		return nil
	}
	err := l.run.Close(ctx)
	if s := l.state.Load(); s != nil && s.Tripped {
		r.Targets.Apply(false, "")
	}
	return err
}

// State returns the running guard's state as of its last evaluation, or nil when none runs.
func (r *Runner) State() *State {
	if l := r.cur.Load(); l != nil {
		return l.state.Load()
	}
	return nil
}

// Observe gives the running guard one finished request, if a guard runs.
func (r *Runner) Observe(rec *record.Record) {
	if l := r.cur.Load(); l != nil {
		l.g.Observe(time.Now(), ObservationOf(rec))
	}
}

// ObservationOf is what the guard sees of a record: a request failed on the server's side
// when it got a 5xx status or broke without the client going away.
func ObservationOf(r *record.Record) Observation {
	o := Observation{Live: r.Class == record.ClassLive, Status: r.Status}
	switch r.Error {
	case "", record.ErrCanceled:
	case record.ErrHTTP:
		o.Failed = r.Status >= 500
	default:
		o.Failed = true
	}
	if r.TTFTMs != nil {
		o.TTFTMs, o.HasTTFT = *r.TTFTMs, true
	}
	return o
}

// loop evaluates the guard every tick until ctx ends.
func (l *loop) loop(ctx context.Context, r *Runner) error {
	every := min(max(l.g.Config().Window/20, 20*time.Millisecond), time.Second)
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tk.C:
			st, changed := l.g.Evaluate(now)
			l.state.Store(&st)
			if !changed {
				continue
			}
			names := r.Targets.Apply(st.Tripped, st.Reason)
			if r.OnChange != nil {
				r.OnChange(st, names)
			}
		}
	}
}
