package gpu

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults applied by [NewSampler] to zero [Options] fields.
const (
	// DefaultInterval is fast enough to follow the energy counter (which an
	// H200 advanced every 100 ms) through a request's prefill and decode,
	// and slow enough that polling stays cheap: one NVMLSource.Sample of an
	// idle H200 (driver 580) took about 3.5 ms, so the sampler goroutine is
	// inside NVML about 1.4% of the time.
	DefaultInterval = 250 * time.Millisecond
	// DefaultCapacity holds about two minutes of history for an 8-GPU host
	// at the default interval (8 × 4 samples/s × 128 s).
	DefaultCapacity = 4096
)

// maxRememberedCauses bounds the set used to report each error cause once,
// so a source that invents a new message every poll cannot grow memory.
const maxRememberedCauses = 32

// Options configures a [Sampler]. The zero value is usable.
type Options struct {
	// Interval is the time between polls of the Source. Zero means
	// DefaultInterval (250 ms). The first poll happens when Run starts.
	Interval time.Duration
	// Capacity is the number of samples (one per GPU per poll, not polls)
	// kept for Recent. When full, the oldest sample is overwritten. Zero
	// means DefaultCapacity.
	Capacity int
	// OnError, if set, is called on the sampler goroutine the first time
	// each distinct error (by message) is returned by the Source, so a
	// caller can log it without a line per poll. It is also called with the
	// ErrNoNVML error that turns the sampler off.
	OnError func(error)
	// NewTicker returns the channel that drives polls and a function that
	// stops it. Nil means a time.Ticker, which tests drive
	// deterministically inside a testing/synctest bubble; a test can also
	// pass a hand-fed channel to step polls one by one.
	NewTicker func(d time.Duration) (ticks <-chan time.Time, stop func())
}

// Sampler polls a [Source] on the goroutine that calls Run, keeps a bounded
// ring of recent samples and passes every poll's samples to subscribers.
//
// The Sampler does not own the Source: the caller closes it once Run has
// returned. When the Source reports [ErrNoNVML] the Sampler reports that once
// through OnError and Run returns it; Err then returns the cause.
type Sampler struct {
	src  Source
	opts Options

	mu    sync.Mutex
	err   error // why the sampler turned itself off
	ring  []Sample
	next  int  // ring index of the next write
	full  bool // ring has wrapped at least once
	subs  map[uint64]func([]Sample)
	subID uint64

	// seen is used only by the sampler goroutine.
	seen map[string]struct{}
}

// NewSampler returns a Sampler for src with opts' zero fields defaulted. It
// does not poll until Run.
func NewSampler(src Source, opts Options) *Sampler {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.NewTicker == nil {
		opts.NewTicker = newTimeTicker
	}
	return &Sampler{
		src:  src,
		opts: opts,
		ring: make([]Sample, opts.Capacity),
		subs: make(map[uint64]func([]Sample)),
		seen: make(map[string]struct{}),
	}
}

func newTimeTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Err returns the error that turned the sampler off by itself (one wrapping
// ErrNoNVML), or nil if it is running or was stopped by its caller.
func (s *Sampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Subscribe registers fn to receive the samples of every poll, on the sampler
// goroutine, one poll after another (subscribers of the same poll are called
// in no particular order). fn must return quickly and must not retain the slice,
// which is reused by the next poll; copy what it keeps. The returned function
// removes the subscription and is safe to call more than once.
func (s *Sampler) Subscribe(fn func([]Sample)) (cancel func()) {
	s.mu.Lock()
	s.subID++
	id := s.subID
	s.subs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

// Recent appends the samples in the ring, oldest first, to dst and returns
// the extended slice.
func (s *Sampler) Recent(dst []Sample) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		dst = append(dst, s.ring[s.next:]...)
	}
	return append(dst, s.ring[:s.next]...)
}

// Run polls the Source once and then every Interval until ctx is done (it
// returns nil) or the Source reports ErrNoNVML (it returns that error). A
// Sampler is run once, by one goroutine.
func (s *Sampler) Run(ctx context.Context) error {
	ticks, stopTicks := s.opts.NewTicker(s.opts.Interval)
	defer stopTicks()

	var buf []Sample
	var subs []func([]Sample)
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return nil
			case <-ticks:
			}
		}
		var ok bool
		buf, subs, ok = s.poll(buf[:0], subs[:0])
		if !ok {
			return s.Err()
		}
	}
}

// poll reads the Source once, stores and publishes the samples, and reports
// false when the Source said the library is absent.
func (s *Sampler) poll(buf []Sample, subs []func([]Sample)) ([]Sample, []func([]Sample), bool) {
	buf, err := s.src.Sample(buf)

	s.mu.Lock()
	for i := range buf {
		s.ring[s.next] = buf[i]
		s.next++
		if s.next == len(s.ring) {
			s.next, s.full = 0, true
		}
	}
	for _, fn := range s.subs {
		subs = append(subs, fn)
	}
	absent := err != nil && errors.Is(err, ErrNoNVML)
	if absent {
		s.err = err
	}
	s.mu.Unlock()

	// Subscribers run outside the lock so that they may call Recent.
	if len(buf) > 0 {
		for _, fn := range subs {
			fn(buf)
		}
	}
	clear(subs)
	if err != nil {
		s.report(err)
	}
	return buf, subs, !absent
}

// report calls OnError the first time a cause is seen. Causes are keyed by
// message; past maxRememberedCauses the memory is reset, so a source whose
// messages never repeat is still reported at most once per poll.
func (s *Sampler) report(err error) {
	if s.opts.OnError == nil {
		return
	}
	key := err.Error()
	if _, ok := s.seen[key]; ok {
		return
	}
	if len(s.seen) >= maxRememberedCauses {
		clear(s.seen)
	}
	s.seen[key] = struct{}{}
	s.opts.OnError(err)
}
