// Package lifecycle is llmtap's one way to start and stop what runs in the background: a loop
// is a Run(ctx) error that returns when ctx ends (or on a fatal error), and whatever holds
// resources or drains has a Close(ctx) error that is bounded by ctx and idempotent. Go starts
// a loop; its Loop's Close ends it.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// Loop is a Run running in a goroutine of its own.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Go runs run in a goroutine of its own, with a context that Close cancels.
func Go(run func(ctx context.Context) error) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.err = run(ctx)
	}()
	return l
}

// Close cancels the loop's context and waits until its Run has returned, or until ctx ends
// (then it returns ctx's error; the Run still ends). It returns Run's error unless that was
// the cancellation. It is idempotent and nil-safe.
func (l *Loop) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
		if errors.Is(l.err, context.Canceled) {
			return nil
		}
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Wait waits for wg until ctx ends (then it returns ctx's error; wg's goroutines end on their
// own): the bounded join of a Close whose goroutines it has already told to stop.
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
