package guard

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// lockedPausable is a Pausable safe for the loop goroutine; it counts pauses and resumes.
type lockedPausable struct {
	mu     sync.Mutex
	paused bool
	pauses atomic.Int64
}

func (p *lockedPausable) Pause(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return false
	}
	p.paused = true
	p.pauses.Add(1)
	return true
}

func (p *lockedPausable) Resume() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.paused
	p.paused = false
	return was
}

func (p *lockedPausable) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestRunnerPausesAndResumes runs the guard loop on a real ticker: a 503 trips it and pauses
// the targets (OnChange told so), the same settings keep the tripped guard, new settings
// replace it by a clear one and resume the targets, and Close ends it.
func TestRunnerPausesAndResumes(t *testing.T) {
	var tg Targets
	p := &lockedPausable{}
	tg.Add("p", p)
	var changes atomic.Int64
	r := &Runner{Targets: &tg, OnChange: func(st State, names []string) {
		if st.Tripped && len(names) == 1 && names[0] == "p" {
			changes.Add(1)
		}
	}}
	if r.State() != nil {
		t.Fatal("a runner not configured has a state")
	}
	r.Observe(&record.Record{Status: 503}) // no guard yet: ignored
	cfg := Config{Window: time.Second, Cooldown: time.Hour}
	r.Configure(cfg)
	if st := r.State(); st == nil || st.Tripped {
		t.Fatalf("a new guard's state is %+v, want clear", st)
	}
	r.Observe(&record.Record{Class: record.ClassShadow, Status: 503, Error: record.ErrHTTP})
	waitFor(t, "a 503 pauses the target", func() bool { return p.isPaused() && changes.Load() == 1 })
	if st := r.State(); !st.Tripped || st.Reason == "" {
		t.Errorf("state after a 503 = %+v, want tripped with a reason", st)
	}

	r.Configure(cfg) // the same settings: the tripped guard goes on
	if !r.State().Tripped || !p.isPaused() {
		t.Error("configuring the same settings replaced the guard")
	}
	r.Configure(Config{Window: 2 * time.Second, Cooldown: time.Hour})
	if r.State().Tripped || p.isPaused() {
		t.Error("new settings kept the tripped guard's pause")
	}
	r.Observe(&record.Record{Status: 429, Error: record.ErrHTTP})
	waitFor(t, "the new guard trips too", p.isPaused)
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r.State() != nil || p.isPaused() {
		t.Errorf("after Close: state %+v, paused %v; want none and resumed", r.State(), p.isPaused())
	}
	if err := r.Close(t.Context()); err != nil { // twice is fine
		t.Fatal(err)
	}
}

// TestObservationOf: which records count as failed on the server's side.
func TestObservationOf(t *testing.T) {
	ttft := 12.5
	tests := []struct {
		name   string
		r      record.Record
		failed bool
	}{
		{"ok", record.Record{Status: 200}, false},
		{"the client went away", record.Record{Status: 200, Error: record.ErrCanceled}, false},
		{"a 4xx is the client's", record.Record{Status: 404, Error: record.ErrHTTP}, false},
		{"a 5xx is the server's", record.Record{Status: 502, Error: record.ErrHTTP}, true},
		{"a broken stream", record.Record{Status: 200, Error: "upstream_error"}, true},
	}
	for _, tt := range tests {
		if o := ObservationOf(&tt.r); o.Failed != tt.failed {
			t.Errorf("%s: failed %v, want %v", tt.name, o.Failed, tt.failed)
		}
	}
	o := ObservationOf(&record.Record{Class: record.ClassLive, Status: 200, TTFTMs: &ttft})
	if !o.Live || !o.HasTTFT || o.TTFTMs != 12.5 {
		t.Errorf("a live record with a TTFT: %+v", o)
	}
}
