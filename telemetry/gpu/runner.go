package gpu

import (
	"context"
	"sync"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
)

// Runner keeps one Sampler of a Source running across reconfigurations: Configure with the
// interval it already samples at keeps the sampler (the same source, no gap, no second
// poller); another interval, or a sampler that turned itself off, stops it and its source
// first and then opens a new one, so two never poll at once. A source that fails to open
// leaves the runner without a sampler, which is no error: what needs GPU data goes on
// without. Close stops it. Its methods are safe for concurrent use.
type Runner struct {
	// Open opens the source (in the proxy, NVML). Required.
	Open func() (Source, error)
	// OnOpenError, when set, is told why Open failed (ErrNoNVML where NVML is absent).
	OnOpenError func(error)
	// OnSamples receives every poll, on the sampler's goroutine. Required.
	OnSamples func([]Sample)
	// OnError, when set, is the sampler's Options.OnError; OnCloseError, when set, is told
	// that closing a source failed.
	OnError      func(error)
	OnCloseError func(error)

	mu       sync.Mutex // held while (re)configuring and by Active
	interval time.Duration
	src      Source // nil while no source is open
	sampler  *Sampler
	unsub    func()
	loop     *lifecycle.Loop // the sampler's Run
}

// Configure makes the runner sample every interval and reports whether it started a new
// sampler.
func (r *Runner) Configure(interval time.Duration) (started bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampler != nil && r.interval == interval && r.sampler.Err() == nil {
		return false
	}
	_ = r.closeLocked(context.Background()) // a poll in progress ends first
	src, err := r.Open()
	if err != nil {
		if r.OnOpenError != nil {
			r.OnOpenError(err)
		}
		return false
	}
	r.interval, r.src = interval, src
	r.sampler = NewSampler(src, Options{Interval: interval, OnError: r.OnError})
	r.unsub = r.sampler.Subscribe(r.OnSamples)
	r.loop = lifecycle.Go(r.sampler.Run) // its ErrNoNVML goes to OnError; Err keeps it
	return true
}

// Close stops the sampler, waiting for it until ctx ends, and closes its source, if one runs.
// It is idempotent; a later Configure starts a sampler again.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeLocked(ctx)
}

func (r *Runner) closeLocked(ctx context.Context) error {
	if r.sampler == nil {
		return nil
	}
	r.unsub()
	src, loop := r.src, r.loop
	r.sampler, r.src, r.unsub = nil, nil, nil
	_ = loop.Close(ctx) // its ErrNoNVML went to OnError
	select {
	case <-loop.Done():
		r.closeSource(src)
		return nil
	default: // ctx ended first: the source closes once the poll in progress has returned
		go func() { <-loop.Done(); r.closeSource(src) }()
		return ctx.Err()
	}
}

func (r *Runner) closeSource(src Source) {
	if err := src.Close(); err != nil && r.OnCloseError != nil {
		r.OnCloseError(err)
	}
}

// Active reports whether a sampler runs: configured with a source that opened, and not
// turned off by its source (ErrNoNVML while polling).
func (r *Runner) Active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampler == nil {
		return false
	}
	select {
	case <-r.loop.Done():
		return false
	default:
		return true
	}
}
