package lifecycle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestLoopClose: Close cancels Run and waits for it (its cancellation is no error), returns a
// fatal error Run returned, gives up when its ctx ends before Run returns, and is idempotent
// and nil-safe.
func TestLoopClose(t *testing.T) {
	t.Parallel()
	returned := false
	l := Go(func(ctx context.Context) error { <-ctx.Done(); returned = true; return ctx.Err() })
	if err := l.Close(t.Context()); err != nil || !returned {
		t.Fatalf("Close = %v, Run returned %v; want nil after Run returned", err, returned)
	}
	if err := l.Close(t.Context()); err != nil {
		t.Errorf("a second Close = %v", err)
	}

	fatal := errors.New("the source went away")
	l = Go(func(context.Context) error { return fatal })
	<-l.Done()
	if err := l.Close(t.Context()); !errors.Is(err, fatal) {
		t.Errorf("Close after a fatal error = %v, want it", err)
	}

	release := make(chan struct{})
	l = Go(func(context.Context) error { <-release; return nil }) // ignores its ctx for a while
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := l.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close of a Run that outlives ctx = %v, want the deadline", err)
	}
	close(release)
	<-l.Done()

	var none *Loop
	if err := none.Close(t.Context()); err != nil {
		t.Errorf("nil Close = %v", err)
	}
}

// TestWait: Wait returns nil once the group is done, and ctx's error when the group outlives
// ctx (its goroutines still end on their own).
func TestWait(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := Wait(ctx, &wg); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for a group that outlives ctx = %v, want the deadline", err)
	}
	close(release)
	if err := Wait(t.Context(), &wg); err != nil {
		t.Errorf("Wait for a group that ends = %v, want nil", err)
	}
}
