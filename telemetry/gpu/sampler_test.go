package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeSource returns gpus samples per poll with an energy counter that grows
// by 100 mJ per poll, and the error errAt returns for the poll number
// (1-based).
type fakeSource struct {
	mu     sync.Mutex
	gpus   int
	polls  int
	errAt  func(poll int) error
	closed bool
}

func (f *fakeSource) Sample(dst []Sample) ([]Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	now := time.Now()
	for i := range f.gpus {
		dst = append(dst, Sample{
			Time: now, Index: i, UUID: fmt.Sprintf("GPU-%d", i),
			EnergyMJ: uint64(f.polls) * 100, PowerMW: 400_000, Valid: FieldEnergy | FieldPower,
		})
	}
	if f.errAt != nil {
		return dst, f.errAt(f.polls)
	}
	return dst, nil
}

func (f *fakeSource) Close() error { f.closed = true; return nil }

func (f *fakeSource) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

// recorder collects what subscribers and OnError receive; the sampler calls
// both from its own goroutine, so access is locked.
type recorder struct {
	mu    sync.Mutex
	times []time.Time
	sizes []int
	errs  []error
}

func (r *recorder) onSamples(b []Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.times = append(r.times, b[0].Time)
	r.sizes = append(r.sizes, len(b))
}

func (r *recorder) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *recorder) snapshot() ([]time.Time, []int, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...), append([]int(nil), r.sizes...), append([]error(nil), r.errs...)
}

// running is a Sampler's Run on a goroutine of its own, as its owners run it.
type running struct {
	cancel context.CancelFunc
	done   chan error // receives what Run returned
}

func runSampler(ctx context.Context, s *Sampler) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	return r
}

// stop ends Run and returns what it returned.
func (r *running) stop() error {
	r.cancel()
	return <-r.done
}

func TestSamplerPollsOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{gpus: 2}
		var rec recorder
		s := NewSampler(src, Options{Interval: 250 * time.Millisecond, Capacity: 5})
		s.Subscribe(rec.onSamples)
		start := time.Now()
		run := runSampler(t.Context(), s)
		synctest.Wait()
		if got := src.pollCount(); got != 1 {
			t.Fatalf("polls right after Run started = %d, want 1 (the first poll is immediate)", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if err := run.stop(); err != nil {
			t.Errorf("Run returned %v once its context ended, want nil", err)
		}

		times, sizes, _ := rec.snapshot()
		if len(times) != 5 {
			t.Fatalf("polls in 1s at 250ms = %d, want 5 (t=0 plus four ticks)", len(times))
		}
		for i, tm := range times {
			if want := start.Add(time.Duration(i) * 250 * time.Millisecond); !tm.Equal(want) {
				t.Errorf("poll %d at %v, want %v", i, tm.Sub(start), want.Sub(start))
			}
			if sizes[i] != 2 {
				t.Errorf("poll %d delivered %d samples, want one per GPU (2)", i, sizes[i])
			}
		}

		// Ten samples were taken into a ring of five: the last five,
		// oldest first, must remain.
		recent := s.Recent(nil)
		if len(recent) != 5 {
			t.Fatalf("Recent len = %d, want the capacity 5", len(recent))
		}
		wantEnergy := []uint64{300, 400, 400, 500, 500}
		wantIndex := []int{1, 0, 1, 0, 1}
		for i, smp := range recent {
			if smp.EnergyMJ != wantEnergy[i] || smp.Index != wantIndex[i] {
				t.Errorf("Recent[%d] = gpu %d energy %d, want gpu %d energy %d",
					i, smp.Index, smp.EnergyMJ, wantIndex[i], wantEnergy[i])
			}
		}
		if s.Err() != nil {
			t.Errorf("Err after its context ended = %v, want nil", s.Err())
		}
		if src.closed {
			t.Error("sampler closed a Source it does not own")
		}
	})
}

func TestSamplerRecentBeforeWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{gpus: 1}
		s := NewSampler(src, Options{Capacity: 8})
		run := runSampler(t.Context(), s)
		time.Sleep(2 * DefaultInterval)
		synctest.Wait()
		_ = run.stop()
		got := s.Recent(nil)
		if len(got) != 3 || got[0].EnergyMJ != 100 || got[2].EnergyMJ != 300 {
			t.Fatalf("Recent = %+v, want the three samples in order (default interval is %v)", got, DefaultInterval)
		}
	})
}

func TestSamplerHandFedTicker(t *testing.T) {
	ticks := make(chan time.Time)
	stopped := make(chan struct{})
	src := &fakeSource{gpus: 1}
	s := NewSampler(src, Options{NewTicker: func(time.Duration) (<-chan time.Time, func()) {
		return ticks, func() { close(stopped) }
	}})
	polled := make(chan struct{}, 1)
	s.Subscribe(func([]Sample) { polled <- struct{}{} })
	run := runSampler(context.Background(), s)
	<-polled
	for range 3 {
		ticks <- time.Time{}
		<-polled
	}
	_ = run.stop()
	<-stopped // the ticker's stop function must run when Run returns
	if got := src.pollCount(); got != 4 {
		t.Errorf("polls = %d, want 4 (one as Run starts, one per tick)", got)
	}
}

func TestSamplerReportsEachCauseOnce(t *testing.T) {
	errA := errors.New("gpu 0: reading temp: GPU is lost")
	errB := errors.New("gpu 1: reading power: Unknown Error")
	// Poll: 1 ok, 2-4 A, 5 B, 6 A again, 7 a fresh error equal in text to A.
	script := map[int]error{2: errA, 3: errA, 4: errA, 5: errB, 6: errA, 7: errors.New(errA.Error())}
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{gpus: 1, errAt: func(p int) error { return script[p] }}
		var rec recorder
		s := NewSampler(src, Options{OnError: rec.onError, Interval: time.Second})
		run := runSampler(t.Context(), s)
		time.Sleep(7 * time.Second)
		synctest.Wait()
		_ = run.stop()
		_, _, errs := rec.snapshot()
		if len(errs) != 2 || errs[0] != errA || errs[1] != errB {
			t.Fatalf("OnError got %v, want exactly [A B]: once per distinct cause, not per poll", errs)
		}
		if s.Err() != nil {
			t.Errorf("ordinary errors turned the sampler off: %v", s.Err())
		}
		if got := len(s.Recent(nil)); got != 8 {
			t.Errorf("Recent len = %d, want 8: samples that come with an error are kept", got)
		}
	})
}

func TestSamplerCauseMemoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{gpus: 1, errAt: func(p int) error { return fmt.Errorf("cause %d", p%(maxRememberedCauses+1)) }}
		var rec recorder
		s := NewSampler(src, Options{OnError: rec.onError, Interval: time.Second})
		run := runSampler(t.Context(), s)
		time.Sleep(3 * maxRememberedCauses * time.Second)
		synctest.Wait()
		_ = run.stop()
		if len(s.seen) > maxRememberedCauses {
			t.Errorf("remembered %d causes, want at most %d", len(s.seen), maxRememberedCauses)
		}
		_, _, errs := rec.snapshot()
		if polls := src.pollCount(); len(errs) > polls {
			t.Errorf("%d reports for %d polls: never more than one per poll", len(errs), polls)
		}
	})
}

func TestSamplerTurnsOffWhenLibraryAbsent(t *testing.T) {
	gone := fmt.Errorf("gpu 0: reading power: %w", ErrNoNVML)
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{gpus: 1, errAt: func(p int) error {
			if p >= 3 {
				return gone
			}
			return nil
		}}
		var rec recorder
		s := NewSampler(src, Options{OnError: rec.onError})
		run := runSampler(t.Context(), s)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case err := <-run.done:
			if !errors.Is(err, ErrNoNVML) {
				t.Errorf("Run returned %v, want ErrNoNVML", err)
			}
		default:
			t.Fatal("sampler still running after the source reported ErrNoNVML")
		}
		if got := src.pollCount(); got != 3 {
			t.Errorf("polls = %d, want 3: no poll after the library went away", got)
		}
		if !errors.Is(s.Err(), ErrNoNVML) {
			t.Errorf("Err = %v, want ErrNoNVML", s.Err())
		}
		if _, _, errs := rec.snapshot(); len(errs) != 1 || errs[0] != gone {
			t.Errorf("OnError got %v, want the absent error once", errs)
		}
	})
}

func TestSamplerContextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := NewSampler(&fakeSource{gpus: 1}, Options{})
		run := runSampler(ctx, s)
		cancel()
		synctest.Wait()
		select {
		case err := <-run.done:
			if err != nil || s.Err() != nil {
				t.Errorf("Run returned %v, Err %v after cancel, want nil", err, s.Err())
			}
		default:
			t.Fatal("sampler did not return after its context was cancelled")
		}
	})
}

func TestSamplerUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec, kept recorder
		s := NewSampler(&fakeSource{gpus: 1}, Options{})
		cancel := s.Subscribe(rec.onSamples)
		s.Subscribe(kept.onSamples)
		run := runSampler(t.Context(), s)
		synctest.Wait()
		cancel()
		cancel()
		time.Sleep(time.Second)
		synctest.Wait()
		_ = run.stop()
		if times, _, _ := rec.snapshot(); len(times) != 1 {
			t.Errorf("cancelled subscriber saw %d polls, want only the first", len(times))
		}
		if times, _, _ := kept.snapshot(); len(times) != 5 {
			t.Errorf("remaining subscriber saw %d polls, want 5", len(times))
		}
	})
}
