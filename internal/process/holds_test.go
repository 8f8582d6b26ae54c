package process

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type countedRunner struct{ destroyed *atomic.Int32 }

func (r countedRunner) Close(context.Context) error { r.destroyed.Add(1); return nil }

// TestHoldIsReferenceCounted: the first Hold creates the runner, later ones adopt it; it is
// destroyed once, by the last LetGo; a failed create holds nothing; holders arriving while the
// first one creates wait for it and adopt what it made.
func TestHoldIsReferenceCounted(t *testing.T) {
	t.Parallel()
	p := &Process{holds: holds{m: map[string]*held{}}}
	var made, destroyed atomic.Int32
	create := func() (countedRunner, error) {
		made.Add(1)
		time.Sleep(10 * time.Millisecond) // holders arriving now wait
		return countedRunner{&destroyed}, nil
	}
	var wg sync.WaitGroup
	var adopted atomic.Int32
	for range 8 {
		wg.Go(func() {
			if _, a, err := Hold(p, "k", create); err != nil {
				t.Error(err)
			} else if a {
				adopted.Add(1)
			}
		})
	}
	wg.Wait()
	if made.Load() != 1 || adopted.Load() != 7 || p.Runners() != 1 {
		t.Fatalf("8 holds: made %d, adopted %d, %d runners; want 1, 7, 1", made.Load(), adopted.Load(), p.Runners())
	}
	for i := range 8 {
		if destroyed.Load() != 0 {
			t.Fatalf("destroyed after %d of 8 LetGo", i)
		}
		_ = p.LetGo("k")
	}
	if destroyed.Load() != 1 || p.Runners() != 0 {
		t.Fatalf("after the last LetGo: destroyed %d times, %d runners; want 1, 0", destroyed.Load(), p.Runners())
	}
	_ = p.LetGo("k") // one too many: nothing held, nothing destroyed
	if destroyed.Load() != 1 {
		t.Fatal("a LetGo without a hold destroyed again")
	}

	boom := errors.New("boom")
	if _, _, err := Hold(p, "bad", func() (countedRunner, error) { return countedRunner{}, boom }); !errors.Is(err, boom) || p.Runners() != 0 {
		t.Fatalf("a failed create: err %v, %d runners; want boom and none held", err, p.Runners())
	}
	if _, adopted, err := Hold(p, "bad", func() (countedRunner, error) { return countedRunner{&destroyed}, nil }); err != nil || adopted {
		t.Fatalf("holding again after a failed create: adopted %v, err %v; want a new runner", adopted, err)
	}
}
