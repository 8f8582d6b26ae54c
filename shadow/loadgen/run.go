package loadgen

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Request builds the n-th request of a run. It must be safe to call from the scheduler
// goroutine while earlier requests are in flight.
type Request func(ctx context.Context, n int) (*http.Request, error)

// ChatRequest returns a Request that posts the same OpenAI chat-completions body to url.
func ChatRequest(url string, body []byte) Request {
	return func(ctx context.Context, n int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

// Config is one open-loop run.
type Config struct {
	Arrivals Arrivals
	Request  Request
	Client   *http.Client
	// Duration ends the schedule; requests in flight are then awaited.
	Duration time.Duration
	// MaxRequests ends the schedule after this many requests (0 = no limit).
	MaxRequests int
	// MaxInFlight bounds concurrent requests; an arrival that finds the bound reached is
	// dropped and counted instead of delaying the schedule (0 = 1024).
	MaxInFlight int
	// Progress, when set, is called about every ProgressEvery with the counters so far.
	Progress      func(Counters)
	ProgressEvery time.Duration
}

// Counters are a run's running totals.
type Counters struct {
	Elapsed   time.Duration
	Sent      int64
	Completed int64
	Errors    int64
	Dropped   int64
	InFlight  int64
	// MaxLag is the largest delay between a request's intended and actual send time.
	MaxLag time.Duration
}

// Run executes the schedule and waits for every request it sent. The run stops early when ctx
// is done.
func Run(ctx context.Context, cfg Config) Counters {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	var (
		sent, completed, errs, dropped, inFlight atomic.Int64
		maxLag                                   atomic.Int64
		wg                                       sync.WaitGroup
	)
	start := time.Now()
	snapshot := func() Counters {
		return Counters{Elapsed: time.Since(start), Sent: sent.Load(), Completed: completed.Load(),
			Errors: errs.Load(), Dropped: dropped.Load(), InFlight: inFlight.Load(),
			MaxLag: time.Duration(maxLag.Load())}
	}
	stopProgress := make(chan struct{})
	var progressDone sync.WaitGroup
	if cfg.Progress != nil {
		every := cfg.ProgressEvery
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		progressDone.Add(1)
		go func() {
			defer progressDone.Done()
			tk := time.NewTicker(every)
			defer tk.Stop()
			for {
				select {
				case <-tk.C:
					cfg.Progress(snapshot())
				case <-stopProgress:
					return
				}
			}
		}()
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for n := 0; cfg.MaxRequests == 0 || n < cfg.MaxRequests; n++ {
		at := cfg.Arrivals.Next()
		if cfg.Duration > 0 && at >= cfg.Duration {
			break
		}
		if wait := time.Until(start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				goto done
			}
		} else if ctx.Err() != nil {
			goto done
		}
		if lag := int64(time.Since(start.Add(at))); lag > maxLag.Load() {
			maxLag.Store(lag)
		}
		if inFlight.Load() >= int64(cfg.MaxInFlight) {
			dropped.Add(1)
			continue
		}
		req, err := cfg.Request(ctx, n)
		if err != nil {
			errs.Add(1)
			continue
		}
		sent.Add(1)
		inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			resp, err := cfg.Client.Do(req)
			if err != nil {
				errs.Add(1)
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode >= 400 {
				errs.Add(1)
				return
			}
			completed.Add(1)
		}()
	}
done:
	wg.Wait()
	close(stopProgress)
	progressDone.Wait()
	return snapshot()
}
