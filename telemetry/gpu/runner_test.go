package gpu

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunnerKeepsAndReplaces drives a Runner on the fake clock: the same interval keeps the
// sampler and its source, another interval closes the source and opens a new one, a sampler
// its source turned off (ErrNoNVML) is replaced by the next Configure, an Open that fails
// leaves no sampler and no error, and Close closes the source.
func TestRunnerKeepsAndReplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var srcs []*fakeSource
		var polls int
		var openErr, samplerErr []error
		failOpen, offAt := false, 0
		r := &Runner{
			Open: func() (Source, error) {
				if failOpen {
					return nil, fmt.Errorf("%w: test", ErrNoNVML)
				}
				off := offAt
				s := &fakeSource{gpus: 1, errAt: func(p int) error {
					if off > 0 && p >= off {
						return ErrNoNVML
					}
					return nil
				}}
				srcs = append(srcs, s)
				return s, nil
			},
			OnOpenError: func(err error) { openErr = append(openErr, err) },
			OnSamples:   func([]Sample) { mu.Lock(); polls++; mu.Unlock() },
			OnError:     func(err error) { mu.Lock(); samplerErr = append(samplerErr, err); mu.Unlock() },
		}
		if started := r.Configure(time.Second); !started || !r.Active() {
			t.Fatalf("Configure = %v, active %v", started, r.Active())
		}
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		if polls != 3 { // at 0, 1 s and 2 s
			t.Errorf("%d polls in 2.5 s at 1 s, want 3", polls)
		}
		mu.Unlock()
		if started := r.Configure(time.Second); started || len(srcs) != 1 {
			t.Errorf("the same interval: started %v, %d sources opened; want the one kept", started, len(srcs))
		}
		if started := r.Configure(2 * time.Second); !started || len(srcs) != 2 || !srcs[0].closed || !r.Active() {
			t.Errorf("another interval: started %v, %d sources, first closed %v; want a second one after closing the first", started, len(srcs), srcs[0].closed)
		}

		offAt = 2
		if r.Configure(time.Second); len(srcs) != 3 {
			t.Fatalf("%d sources opened, want 3", len(srcs))
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		if r.Active() || len(samplerErr) != 1 || !errors.Is(samplerErr[0], ErrNoNVML) {
			t.Errorf("a source that went away: active %v, errors %v", r.Active(), samplerErr)
		}
		mu.Unlock()
		offAt = 0
		if started := r.Configure(time.Second); !started || len(srcs) != 4 || !r.Active() {
			t.Errorf("the same interval after the sampler turned off: started %v, %d sources, active %v; want a new one", started, len(srcs), r.Active())
		}

		failOpen = true
		if started := r.Configure(3 * time.Second); started || r.Active() || len(openErr) != 1 || !srcs[3].closed {
			t.Errorf("an Open that fails: started %v, active %v, open errors %v; want no sampler, the old source closed", started, r.Active(), openErr)
		}
		failOpen = false
		if started := r.Configure(time.Second); !started || !r.Active() {
			t.Fatalf("Configure = %v, active %v", started, r.Active())
		}
		if err := r.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if r.Active() || !srcs[4].closed {
			t.Errorf("after Close: active %v, source closed %v", r.Active(), srcs[4].closed)
		}
		if err := r.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
