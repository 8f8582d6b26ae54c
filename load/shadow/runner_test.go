package shadow

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/load/gen"
)

// counting is an upstream that counts requests and checks the mark.
type counting struct {
	n, unmarked atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	if r.Header.Get("X-Mark") == "" {
		c.unmarked.Add(1)
	}
	io.Copy(io.Discard, r.Body)
	w.Write([]byte("data: {}\n\n"))
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

func TestRunnerLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	up := &counting{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	var marks atomic.Int64
	cfg := Config{
		Name: "t", Arrival: gen.ArrivalSpec{Pattern: "constant", Rate: 100}, MaxRate: 200,
		Source: &Source{URL: srv.URL, Bodies: [][]byte{[]byte(`{}`)},
			Mark: func(h http.Header) { marks.Add(1); h.Set("X-Mark", "1") }},
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	if st := r.Status(); st.State != StateStopped || st.Sent != 0 {
		t.Fatalf("a new runner is %+v, want stopped with nothing sent", st)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "50 requests at 100/s", 5*time.Second, func() bool { return up.n.Load() >= 50 })

	// Paused: nothing more is sent.
	if !r.Pause("test") || r.Pause("again") {
		t.Fatal("Pause should report a change once")
	}
	// An arrival the pacer released just before the pause may still be on its way.
	time.Sleep(100 * time.Millisecond)
	waitFor(t, "in-flight requests to end", 5*time.Second, func() bool { return r.Status().InFlight == 0 })
	n := up.n.Load()
	time.Sleep(300 * time.Millisecond)
	if st := r.Status(); st.State != StatePaused || up.n.Load() != n || st.PauseReason != "test" {
		t.Fatalf("paused runner sent %d more; status %+v", up.n.Load()-n, st)
	}
	if !r.Resume() {
		t.Fatal("Resume should report a change")
	}
	waitFor(t, "requests after the resume", 5*time.Second, func() bool { return up.n.Load() > n+10 })

	// Rate ceiling.
	if err := r.SetRate(500); err == nil {
		t.Fatal("a rate over max_rate was accepted")
	}
	if err := r.SetRate(HardMaxRate + 1); err == nil {
		t.Fatal("a rate over the hard ceiling was accepted")
	}
	if err := r.SetRate(150); err != nil || r.Status().Rate != 150 {
		t.Fatalf("SetRate(150): %v, status %+v", err, r.Status())
	}

	r.Stop()
	waitFor(t, "the runner to stop", 5*time.Second, func() bool { return r.Status().State == StateStopped })
	st := r.Status()
	if st.Sent != up.n.Load() || st.Sent != marks.Load() || up.unmarked.Load() != 0 || st.OK != st.Sent || st.Pauses != 1 || st.Resumes != 1 {
		t.Fatalf("status %+v; upstream saw %d (%d unmarked), %d marks", st, up.n.Load(), up.unmarked.Load(), marks.Load())
	}
	// Restart: counters continue.
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "requests after the restart", 5*time.Second, func() bool { return r.Status().Sent > st.Sent+10 })
}

func TestRunnerDurationAndStartAfter(t *testing.T) {
	defer goleak.VerifyNone(t)
	up := &counting{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	r, err := New(Config{Name: "d", Arrival: gen.ArrivalSpec{Pattern: "constant", Rate: 100},
		StartAfter: time.Second, Duration: 500 * time.Millisecond,
		Source: &Source{URL: srv.URL, Bodies: [][]byte{[]byte(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	r.Start()
	if st := r.Status(); st.State != StateWaiting || up.n.Load() != 0 {
		t.Fatalf("before start_after: %+v, %d sent", st, up.n.Load())
	}
	var st Status
	waitFor(t, "done after the duration", 10*time.Second, func() bool {
		st = r.Status()
		return st.State == StateDone && !st.Draining
	})
	// 500 ms at 100/s: 50 arrivals at most, the schedule ending exactly at the end of the
	// duration; it starts on the supervisor's 50 ms tick after start_after, which a loaded
	// machine can delay much further, so only a lower bound of half.
	if n := up.n.Load(); n < 25 || n > 50 || st.Sent != n {
		t.Fatalf("%d requests at the upstream (%d sent) in a 500 ms window at 100/s, want 25-50", n, st.Sent)
	}
}

func TestRunnerTraceEnds(t *testing.T) {
	defer goleak.VerifyNone(t)
	up := &counting{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	times := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	bodies := [][]byte{[]byte(`{}`), []byte(`{}`), []byte(`{}`), []byte(`{}`)}
	r, err := New(Config{Name: "tr", Trace: times, Speedup: 2, Source: &Source{URL: srv.URL, Bodies: bodies}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	if err := r.SetRate(3); err != ErrTraceRate {
		t.Fatalf("SetRate on a trace load: %v", err)
	}
	r.Start()
	waitFor(t, "the trace to end", 5*time.Second, func() bool { return r.Status().State == StateDone })
	if n := up.n.Load(); n != 4 {
		t.Fatalf("the upstream saw %d requests of a 4-request trace", n)
	}
}

func TestConfigValidate(t *testing.T) {
	src := &Source{URL: "http://x", Bodies: [][]byte{{}}}
	bad := []struct {
		name string
		cfg  Config
	}{
		{"no name", Config{Source: src, Arrival: gen.ArrivalSpec{Rate: 1}}},
		{"no rate", Config{Name: "a", Source: src}},
		{"rate over the hard ceiling", Config{Name: "a", Source: src, Arrival: gen.ArrivalSpec{Rate: HardMaxRate + 1}}},
		{"rate over max_rate", Config{Name: "a", Source: src, Arrival: gen.ArrivalSpec{Rate: 10}, MaxRate: 5}},
		{"in flight over the hard ceiling", Config{Name: "a", Source: src, Arrival: gen.ArrivalSpec{Rate: 1}, MaxInFlight: HardMaxInFlight + 1}},
		{"headroom without SLO", Config{Name: "a", Source: src, Headroom: &HeadroomConfig{Start: 1, Step: 1, Max: 2, StepDuration: time.Second}}},
	}
	for _, b := range bad {
		if b.cfg.Validate() == nil {
			t.Errorf("%s: no error", b.name)
		}
	}
}

// TestRunnerNameDuringReconfigure: the proxy asks a runner's name for every marked request
// (classify → loadRunning) without the runner's lock while a reload reconfigures it; under
// -race this fails when Name reads the config Reconfigure writes (issue 35). A runner also keeps
// its name: a config of another name is refused.
func TestRunnerNameDuringReconfigure(t *testing.T) {
	t.Parallel()
	cfg := Config{Name: "n", Arrival: gen.ArrivalSpec{Pattern: "constant", Rate: 1}, MaxRate: 10,
		Source: &Source{URL: "http://127.0.0.1:1", Bodies: [][]byte{[]byte(`{}`)}}}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if r.Name() != "n" {
					t.Error("the name changed")
					return
				}
			}
		}
	}()
	for i := range 200 {
		c := cfg
		c.Arrival.Rate = float64(1 + i%5)
		if err := r.Reconfigure(c); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	c := cfg
	c.Name = "other"
	if err := r.Reconfigure(c); err == nil || r.Name() != "n" {
		t.Fatalf("reconfiguring runner n as %q: err %v, name %q; want refused, name n", c.Name, err, r.Name())
	}
}
