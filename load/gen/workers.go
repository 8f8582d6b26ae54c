package gen

import "sync"

// workers runs open-loop sends on reused goroutines. A fresh goroutine per request starts
// with a small stack that grows (by copying) through the HTTP client's deep call chain on
// every request; at thousands of requests per second that copying was a fifth of the
// generator's CPU (measured with pprof at 4,000 req/s). A worker that finishes a send waits
// for the next one instead of exiting, so the schedule hands work to a warm goroutine when one
// is idle and starts a new one only when none is: the number of goroutines still follows the
// number of requests in flight, never capping it.
type workers struct {
	work chan func()
	quit chan struct{}
	wg   *sync.WaitGroup
}

func newWorkers(wg *sync.WaitGroup) *workers {
	return &workers{work: make(chan func()), quit: make(chan struct{}), wg: wg}
}

// run runs f on an idle worker, or on a new one when every worker is busy. It never blocks.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		w.wg.Go(func() {
			for {
				f()
				select {
				case f = <-w.work:
				case <-w.quit:
					return
				}
			}
		})
	}
}

// stop lets idle workers exit, and busy ones once their send is done. run must not be called
// after stop.
func (w *workers) stop() { close(w.quit) }
