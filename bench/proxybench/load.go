package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// newClient returns an HTTP/1.1 client that keeps one connection per concurrent request, so
// runs measure proxying rather than connection setup.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// requestBody is a small chat request: 128 output tokens, usage in the stream as AIPerf and most
// clients ask for it (so neither the mock nor llmtap falls back to a tokenizer).
func requestBody(stream bool, tokens int) []byte {
	if stream {
		return fmt.Appendf(nil, `{"model":"mock-model","messages":[{"role":"user","content":"Tell me a story."}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":%d}`, tokens)
	}
	return fmt.Appendf(nil, `{"model":"mock-model","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":%d}`, tokens)
}

// sample is what the client saw of one request.
type sample struct {
	ttft   time.Duration // request sent → first body byte
	events int           // SSE events (blank-line terminated); 1 for a non-streaming body
}

// load is the client side of one run: conc closed-loop workers, each sending the next request
// when the previous response is complete, until the duration is up; requests in flight at the
// end run to completion and count.
type load struct {
	client *http.Client
	url    string
	body   []byte
	stream bool
	conc   int
}

// loadResult sums a run as the client saw it.
type loadResult struct {
	requests int
	events   int
	errors   int
	firstErr error
	elapsed  time.Duration
	ttfts    []time.Duration
}

func (l *load) run(ctx context.Context, d time.Duration) loadResult {
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	begin := time.Now()
	stopAt := begin.Add(d)
	for range l.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var local []sample
			var errs int
			var firstErr error
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				s, err := l.one(ctx, buf)
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					// A failing target must not turn into a busy loop.
					time.Sleep(10 * time.Millisecond)
					continue
				}
				local = append(local, s)
			}
			mu.Lock()
			defer mu.Unlock()
			res.requests += len(local)
			for _, s := range local {
				res.events += s.events
				res.ttfts = append(res.ttfts, s.ttft)
			}
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(begin)
	return res
}

// one sends a request and reads the whole response, counting events as it goes.
func (l *load) one(ctx context.Context, buf []byte) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(l.body))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return sample{}, fmt.Errorf("status %s", resp.Status)
	}
	var s sample
	var prev byte
	first := true
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if first {
				s.ttft = time.Since(sent)
				first = false
			}
			if l.stream {
				s.events += countEvents(buf[:n], prev)
				prev = buf[n-1]
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sample{}, err
		}
	}
	if !l.stream {
		s.events = 1
	}
	return s, nil
}

// countEvents counts the event-ending blank lines ("\n\n") in p, one of whose newlines may be
// the last byte of the previous read (prev).
func countEvents(p []byte, prev byte) int {
	n := bytes.Count(p, []byte("\n\n"))
	if prev == '\n' && len(p) > 0 && p[0] == '\n' {
		n++
	}
	return n
}

// idleStreams opens n streams that the upstream holds open (its TTFT is far longer than the
// measurement) and returns once every one of them has its response headers, or fails after
// timeout. The streams stay open until ctx is canceled; wait joins their goroutines.
func idleStreams(ctx context.Context, client *http.Client, url string, n int, timeout time.Duration) (wait func(), err error) {
	body := requestBody(true, 128)
	var (
		wg      sync.WaitGroup
		ready   atomic.Int64
		failed  atomic.Int64
		errOnce sync.Once
		first   error
	)
	// Open them in batches so that the listen backlogs do not overflow into SYN retries.
	const batch = 200
	for i := 0; i < n; i++ {
		if i > 0 && i%batch == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
				var resp *http.Response
				resp, err = client.Do(req)
				if err == nil {
					defer resp.Body.Close()
					ready.Add(1)
					_, _ = io.Copy(io.Discard, resp.Body)
					return
				}
			}
			if ctx.Err() == nil {
				// Set the error before counting the failure: the waiting loop reads first only
				// after it has seen the count.
				errOnce.Do(func() { first = err })
				failed.Add(1)
			}
		}()
	}
	wait = wg.Wait
	deadline := time.Now().Add(timeout)
	for ready.Load() < int64(n) {
		if failed.Load() > 0 {
			return wait, fmt.Errorf("%d of %d idle streams failed: %v", failed.Load(), n, first)
		}
		if time.Now().After(deadline) {
			return wait, fmt.Errorf("only %d of %d idle streams open after %v", ready.Load(), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return wait, nil
}
