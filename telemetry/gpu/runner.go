package gpu

import (
	"context"
	"sync"
	"time"
)

// Runner keeps one Sampler of a Source running across reconfigurations: Configure with the
// interval it already samples at keeps the sampler (the same source, no gap, no second
// poller); another interval, or a sampler that turned itself off, stops it and its source
// first and then opens a new one, so two never poll at once. A source that fails to open
// leaves the runner without a sampler, which is no error: what needs GPU data goes on
// without. Its methods are safe for concurrent use.
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
	cancel   context.CancelFunc // ends the sampler's Run
	done     chan struct{}      // closed when its Run has returned
}

// Configure makes the runner sample every interval and reports whether it started a new
// sampler.
func (r *Runner) Configure(interval time.Duration) (started bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampler != nil && r.interval == interval && r.sampler.Err() == nil {
		return false
	}
	r.stopLocked()
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
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func(s *Sampler, done chan struct{}) {
		defer close(done)
		_ = s.Run(ctx) // its ErrNoNVML went to OnError; Err keeps it
	}(r.sampler, r.done)
	return true
}

// Stop stops the sampler and closes its source, if one runs.
func (r *Runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

func (r *Runner) stopLocked() {
	if r.sampler == nil {
		return
	}
	r.unsub()
	r.cancel()
	<-r.done
	if err := r.src.Close(); err != nil && r.OnCloseError != nil {
		r.OnCloseError(err)
	}
	r.sampler, r.src, r.unsub = nil, nil, nil
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
	case <-r.done:
		return false
	default:
		return true
	}
}
