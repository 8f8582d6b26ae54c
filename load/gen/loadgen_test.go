package gen

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoissonRateAndCV(t *testing.T) {
	const rate, n = 200.0, 20000
	p := NewPoisson(rate, rand.New(rand.NewPCG(1, 2)))
	var prev time.Duration
	var sum, sumsq float64
	for range n {
		at := p.Next()
		gap := (at - prev).Seconds()
		if gap < 0 {
			t.Fatalf("arrival times went backwards: %v after %v", at, prev)
		}
		sum += gap
		sumsq += gap * gap
		prev = at
	}
	mean := sum / n
	cv := math.Sqrt(sumsq/n-mean*mean) / mean
	// With 20,000 exponential gaps the sample mean's relative standard error is 1/sqrt(n) ≈ 0.7 %;
	// 3 % is more than four standard errors, so this fails only if the rate is wrong.
	if got := 1 / mean; math.Abs(got-rate)/rate > 0.03 {
		t.Errorf("achieved rate %.2f/s, want %.0f/s within 3%%", got, rate)
	}
	// An exponential distribution has CV 1.
	if math.Abs(cv-1) > 0.05 {
		t.Errorf("inter-arrival CV %.3f, want 1 ± 0.05 (exponential)", cv)
	}
}

func TestConstantHasNoDrift(t *testing.T) {
	c := NewConstant(3) // a gap of 1/3 s cannot be represented exactly
	var at time.Duration
	for range 3001 {
		at = c.Next()
	}
	if want := 1000 * time.Second; at != want {
		t.Fatalf("request 3000 at %v, want exactly %v", at, want)
	}
}

func TestRunSendsScheduleAndWaits(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c := Run(context.Background(), Config{
		Arrivals:    NewConstant(1000),
		Request:     ChatRequest(srv.URL, []byte(`{}`)),
		MaxRequests: 50,
	})
	if c.Sent != 50 || c.Completed != 50 || got.Load() != 50 {
		t.Fatalf("sent %d, completed %d, server saw %d; want 50 each", c.Sent, c.Completed, got.Load())
	}
	if c.InFlight != 0 {
		t.Fatalf("%d requests still in flight after Run returned", c.InFlight)
	}
}

func TestRunDropsInsteadOfBlocking(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	c := Run(context.Background(), Config{
		Arrivals:    NewConstant(2000),
		Request:     ChatRequest(srv.URL, []byte(`{}`)),
		MaxRequests: 20,
		MaxInFlight: 5,
		// Hold the 5 admitted requests until the whole schedule has been decided.
		ProgressEvery: time.Millisecond,
		Progress: func(c Counters) {
			if c.Sent+c.Dropped == 20 {
				once.Do(func() { close(release) })
			}
		},
	})
	if c.Sent != 5 || c.Dropped != 15 {
		t.Fatalf("sent %d, dropped %d; want 5 sent and 15 dropped with 5 in flight held", c.Sent, c.Dropped)
	}
}
