package gen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeServer is an http.RoundTripper that answers every request after delay on whatever clock
// is running (the fake one inside a synctest bubble), noting when each request arrived and how
// many were in flight at once.
type fakeServer struct {
	delay  time.Duration
	status int

	mu                    sync.Mutex
	arrived               []arrival
	inFlight, maxInFlight int
}

type arrival struct {
	n  int
	at time.Time
}

func (f *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	n, _ := strconv.Atoi(req.Header.Get("X-N"))
	f.mu.Lock()
	f.arrived = append(f.arrived, arrival{n, time.Now()})
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	if f.delay > 0 {
		tm := time.NewTimer(f.delay)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	status := f.status
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

// numbered builds requests that carry their number, for fakeServer.
func numbered(ctx context.Context, n int) (*http.Request, error) {
	req, err := ChatRequest("http://loadgen.test/v1/chat/completions", []byte(`{}`))(ctx, n)
	if err == nil {
		req.Header.Set("X-N", strconv.Itoa(n))
	}
	return req, err
}

// outcomes collects OnDone calls.
type outcomes struct {
	mu  sync.Mutex
	all []Outcome
}

func (o *outcomes) add(out Outcome) { o.mu.Lock(); o.all = append(o.all, out); o.mu.Unlock() }

func (o *outcomes) sorted() []Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.SortedFunc(slices.Values(o.all), func(a, b Outcome) int { return a.N - b.N })
}

func TestRunReleasesOnSchedule(t *testing.T) {
	// On the fake clock a pacer that is never late releases every request at exactly its
	// intended time, in order, whatever the spin threshold; the server sees them then too.
	const n = 200
	for _, spin := range []time.Duration{0, -1, 5 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			srv := &fakeServer{delay: 30 * time.Millisecond}
			var got outcomes
			start := time.Now() // the bubble's clock stands still until Run blocks
			c := Run(context.Background(), Config{
				Arrivals: NewPoisson(500, seeded(21)), Request: numbered,
				Client: &http.Client{Transport: srv}, MaxRequests: n, SpinThreshold: spin,
				OnDone: got.add,
			})
			want := NewPoisson(500, seeded(21))
			if len(srv.arrived) != n {
				t.Fatalf("spin %v: server saw %d requests, want %d", spin, len(srv.arrived), n)
			}
			for i, a := range srv.arrived {
				at := want.Next()
				if a.n != i || a.at.Sub(start) != at {
					t.Errorf("spin %v: arrival %d was request %d at %v, want request %d at %v",
						spin, i, a.n, a.at.Sub(start), i, at)
				}
			}
			for _, o := range got.sorted() {
				if o.Lag() != 0 || o.QueueWait() != 0 || o.Latency() != srv.delay || o.Status != 200 || o.Err != nil {
					t.Errorf("spin %v: request %d: %+v, want no lag or wait, %v latency, 200", spin, o.N, o, srv.delay)
				}
			}
			if c.Scheduled != n || c.Sent != n || c.Completed != n || c.Lag.Count != n || c.Lag.Max != 0 {
				t.Errorf("spin %v: counters %+v", spin, c)
			}
			if srv.maxInFlight < 2 {
				t.Errorf("spin %v: at most %d in flight: the schedule waited for responses", spin, srv.maxInFlight)
			}
		})
	}
}

func TestRunQueueShowsWait(t *testing.T) {
	// One slot, a request every millisecond, each taking 10 ms: request i is released at i ms,
	// sent at 10i ms when its predecessor finishes, so it waits 9i ms and the user arriving on
	// schedule sees 10i + 10 − i ms.
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{delay: 10 * time.Millisecond}
		var got outcomes
		c := Run(context.Background(), Config{
			Arrivals: NewConstant(1000), Request: numbered, Client: &http.Client{Transport: srv},
			MaxRequests: 5, MaxInFlight: 1, Queue: true, OnDone: got.add,
		})
		ms := time.Millisecond
		for i, o := range got.sorted() {
			d := time.Duration(i)
			if o.Intended != d*ms || o.Released != d*ms || o.Sent != 10*d*ms || o.QueueWait() != 9*d*ms ||
				o.Latency() != 10*ms || o.EffectiveLatency()-o.Latency() != 9*d*ms {
				t.Errorf("request %d: %+v, want sent at %v after waiting %v", i, o.Stamp, 10*d*ms, 9*d*ms)
			}
		}
		if c.Sent != 5 || c.Dropped != 0 || c.Queued != 0 || c.InFlight != 0 || srv.maxInFlight != 1 {
			t.Errorf("counters %+v, server max in flight %d; want 5 sent one at a time", c, srv.maxInFlight)
		}
		// The median comes from the histogram, good to three significant digits; the max is exact.
		if c.QueueWait.Count != 5 || c.QueueWait.Max != 36*ms || (c.QueueWait.P50-18*ms).Abs() > 18*time.Microsecond {
			t.Errorf("queue wait %+v, want 5 waits, median 18ms ± 0.1%%, max 36ms", c.QueueWait)
		}
		if c.Elapsed != 50*ms {
			t.Errorf("run took %v, want 50ms", c.Elapsed)
		}
	})
}

func TestRunQueueBounds(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name                         string
		cfg                          Config
		cancelAfter                  time.Duration
		sent, errs, dropped, elapsed int64
	}{
		{"a full queue drops and counts", Config{MaxInFlight: 1, Queue: true, MaxQueue: 2}, 0, 3, 0, 2, 30},
		{"Concurrency with Arrivals is a queueing ceiling", Config{Concurrency: 2}, 0, 5, 0, 0, 30},
		{"cancel drops what is queued and fails what is in flight", Config{MaxInFlight: 1, Queue: true}, 5 * ms, 1, 1, 4, 5},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			if c.cancelAfter > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.cancelAfter)
				defer cancel()
			}
			cfg := c.cfg
			cfg.Arrivals, cfg.Request, cfg.MaxRequests = NewConstant(1000), numbered, 5
			cfg.Client = &http.Client{Transport: &fakeServer{delay: 10 * ms}}
			got := Run(ctx, cfg)
			if got.Scheduled != 5 || got.Sent != c.sent || got.Errors != c.errs || got.Dropped != c.dropped ||
				got.Queued != 0 || got.Elapsed != time.Duration(c.elapsed)*ms {
				t.Errorf("%s: %+v; want 5 scheduled, %d sent, %d errors, %d dropped, %dms",
					c.name, got, c.sent, c.errs, c.dropped, c.elapsed)
			}
		})
	}
}

func TestRunClosedLoop(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name         string
		cfg          Config
		sent         int64
		elapsed      time.Duration
		maxInFlight  int
		scheduleLags int64
	}{
		{"N workers back to back", Config{Concurrency: 3, MaxRequests: 30}, 30, 100 * ms, 3, 0},
		{"Duration stops new requests, awaits the last", Config{Concurrency: 2, Duration: 55 * ms}, 12, 60 * ms, 2, 0},
		{"nothing to run", Config{}, 0, 0, 0, 0},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			srv := &fakeServer{delay: 10 * ms}
			cfg := c.cfg
			cfg.Request, cfg.Client = numbered, &http.Client{Transport: srv}
			got := Run(context.Background(), cfg)
			if got.Sent != c.sent || got.Completed != c.sent || got.Elapsed != c.elapsed ||
				srv.maxInFlight != c.maxInFlight || got.Lag.Count != c.scheduleLags {
				t.Errorf("%s: %+v, server max in flight %d; want %d sent in %v, %d at once",
					c.name, got, srv.maxInFlight, c.sent, c.elapsed, c.maxInFlight)
			}
		})
	}
}

func TestRunStampsContextAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mismatched []int
		var mu sync.Mutex
		boom := errors.New("cannot build request 3")
		var got outcomes
		c := Run(context.Background(), Config{
			Arrivals: NewConstant(100), MaxRequests: 6, OnDone: got.add,
			Client: &http.Client{Transport: &fakeServer{status: 503}},
			Request: func(ctx context.Context, n int) (*http.Request, error) {
				if at, ok := IntendedTime(ctx); !ok || at != start.Add(time.Duration(n)*10*time.Millisecond) {
					mu.Lock()
					mismatched = append(mismatched, n)
					mu.Unlock()
				}
				if n == 3 {
					return nil, boom
				}
				return numbered(ctx, n)
			},
		})
		if len(mismatched) > 0 {
			t.Errorf("requests %v did not carry their intended time in the context", mismatched)
		}
		// 503s are read in full but are errors; the request that could not be built was never sent.
		if c.Scheduled != 6 || c.Sent != 5 || c.Errors != 6 || c.Completed != 0 {
			t.Errorf("counters %+v; want 6 scheduled, 5 sent, 6 errors", c)
		}
		for _, o := range got.sorted() {
			switch {
			case o.N == 3 && !errors.Is(o.Err, boom):
				t.Errorf("request 3: err %v, want the builder's", o.Err)
			case o.N != 3 && (o.Status != 503 || o.Err != nil):
				t.Errorf("request %d: status %d, err %v; want 503 and no error", o.N, o.Status, o.Err)
			}
		}
	})
}

func TestRunEndsWithFiniteArrivals(t *testing.T) {
	// A trace ends the run by itself, without MaxRequests or Duration.
	synctest.Test(t, func(t *testing.T) {
		tr, _ := NewTrace([]time.Duration{0, time.Second, 3 * time.Second}, 2)
		c := Run(context.Background(), Config{Arrivals: tr, Request: numbered,
			Client: &http.Client{Transport: &fakeServer{}}})
		if c.Sent != 3 || c.Elapsed != 1500*time.Millisecond {
			t.Errorf("counters %+v; want 3 sent over 1.5s", c)
		}
	})
}
