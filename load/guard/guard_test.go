package guard

import (
	"strings"
	"testing"
	"time"
)

// clock is the fake clock the tests drive the guard with.
type clock struct{ t time.Time }

func (c *clock) advance(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

// feed observes n live requests with the given TTFT, spread evenly over d.
func feed(g *Guard, c *clock, n int, d time.Duration, ttftMs float64, failed bool) {
	for range n {
		g.Observe(c.advance(d/time.Duration(n)), Observation{Live: true, Status: 200, Failed: failed, TTFTMs: ttftMs, HasTTFT: !failed})
	}
}

func TestGuardTripsOnTTFTAndClearsAfterCooldown(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	g := New(Config{Window: 2 * time.Second, TTFTP99: 200 * time.Millisecond, Cooldown: 3 * time.Second, MinRequests: 5})

	feed(g, c, 40, 2*time.Second, 50, false)
	if st, changed := g.Evaluate(c.t); st.Tripped || changed {
		t.Fatalf("healthy traffic (p99 50ms < 200ms) tripped the guard: %+v", st)
	}
	// The server degrades: TTFT jumps to 800 ms.
	feed(g, c, 40, 2*time.Second, 800, false)
	st, changed := g.Evaluate(c.t)
	if !st.Tripped || !changed || !strings.HasPrefix(st.Reason, ReasonTTFT) || st.Trips != 1 {
		t.Fatalf("p99 800ms > 200ms did not trip: %+v (changed %v)", st, changed)
	}
	if st.LiveTTFTP99Ms < 700 {
		t.Fatalf("live p99 %v ms, want about 800", st.LiveTTFTP99Ms)
	}
	// It recovers. For a window the slow requests are still in it: still tripped.
	feed(g, c, 20, time.Second, 50, false)
	if st, _ := g.Evaluate(c.t); !st.Tripped {
		t.Fatalf("cleared while the window still held slow requests: %+v", st)
	}
	// Once they left the window the cool-down runs: not cleared before it ends …
	feed(g, c, 20, time.Second, 50, false) // the window is now all fast requests
	lastBad := c.t.Add(-time.Second)       // the last evaluation that saw the limit crossed
	feed(g, c, 20, 3*time.Second-time.Second-time.Millisecond, 50, false)
	if st, _ := g.Evaluate(c.t); !st.Tripped {
		t.Fatalf("cleared %v after the last crossing, before the 3s cool-down: %+v", c.t.Sub(lastBad), st)
	}
	// … and cleared after it.
	feed(g, c, 10, 2*time.Second, 50, false)
	st, changed = g.Evaluate(c.t)
	if st.Tripped || !changed || st.Clears != 1 {
		t.Fatalf("not cleared after the cool-down: %+v", st)
	}
}

func TestGuardRules(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		obs    []Observation
		reason string // "" = must not trip
	}{
		{"a 429 to shadow traffic trips at once", Config{}, []Observation{{Live: false, Status: 429}}, ReasonStatus + " 429"},
		{"a 503 to live traffic trips at once", Config{}, []Observation{{Live: true, Status: 503, Failed: true}}, ReasonStatus + " 503"},
		{"statuses can be turned off", Config{Statuses: []int{}}, []Observation{{Live: true, Status: 503, Failed: true}}, ""},
		{"a 500 is not a tripping status", Config{}, []Observation{{Live: true, Status: 500, Failed: true}}, ""},
		{"error rate over the limit", Config{ErrorRate: 0.2, MinRequests: 4},
			[]Observation{{Live: true, Status: 200}, {Live: true, Status: 500, Failed: true}, {Live: true, Status: 200}, {Live: true, Status: 500, Failed: true}}, ReasonErrors},
		{"error rate: too few requests to judge", Config{ErrorRate: 0.2, MinRequests: 5},
			[]Observation{{Live: true, Status: 500, Failed: true}, {Live: true, Status: 500, Failed: true}}, ""},
		{"shadow errors do not count as live errors", Config{ErrorRate: 0.2, MinRequests: 1},
			[]Observation{{Live: false, Status: 500, Failed: true}, {Live: true, Status: 200}}, ""},
		{"slow shadow TTFT does not count", Config{TTFTP99: time.Millisecond, MinRequests: 1},
			[]Observation{{Live: false, Status: 200, TTFTMs: 900, HasTTFT: true}, {Live: true, Status: 200, TTFTMs: 0.5, HasTTFT: true}}, ""},
	}
	for _, tt := range tests {
		c := &clock{t: time.Unix(5, 0)}
		g := New(tt.cfg)
		for _, o := range tt.obs {
			g.Observe(c.advance(time.Millisecond), o)
		}
		st, _ := g.Evaluate(c.t)
		switch {
		case tt.reason == "" && st.Tripped:
			t.Errorf("%s: tripped (%s)", tt.name, st.Reason)
		case tt.reason != "" && (!st.Tripped || !strings.HasPrefix(st.Reason, tt.reason)):
			t.Errorf("%s: state %+v, want tripped with %q", tt.name, st, tt.reason)
		}
	}
}

func TestGuardStatusAgesOut(t *testing.T) {
	c := &clock{t: time.Unix(5, 0)}
	g := New(Config{Window: time.Second, Cooldown: time.Second})
	g.Observe(c.t, Observation{Status: 429})
	if st, _ := g.Evaluate(c.t); !st.Tripped {
		t.Fatal("429 did not trip")
	}
	c.advance(900 * time.Millisecond)
	if st, _ := g.Evaluate(c.t); !st.Tripped {
		t.Fatal("cleared before the cool-down")
	}
	c.advance(100 * time.Millisecond)
	if st, changed := g.Evaluate(c.t); st.Tripped || !changed {
		t.Fatalf("not cleared a cool-down after the 429: %+v", st)
	}
}

type pausable struct{ paused bool }

func (p *pausable) Pause(string) bool { was := p.paused; p.paused = true; return !was }
func (p *pausable) Resume() bool      { was := p.paused; p.paused = false; return was }

func TestTargets(t *testing.T) {
	var ts Targets
	a, b := &pausable{}, &pausable{}
	ts.Add("a", a)
	if got := ts.Apply(true, "x"); len(got) != 1 || !a.paused {
		t.Fatalf("Apply(true) changed %v, a paused %v", got, a.paused)
	}
	removeB := ts.Add("b", b)
	if !b.paused {
		t.Fatal("a target added while tripped was not paused")
	}
	removeB()
	if got := ts.Apply(false, ""); len(got) != 1 || got[0] != "a" || a.paused || !b.paused {
		t.Fatalf("Apply(false) changed %v; a paused %v, removed b paused %v", got, a.paused, b.paused)
	}
}

func TestValidate(t *testing.T) {
	bad := []Config{{ErrorRate: 2}, {Window: time.Millisecond}, {Statuses: []int{42}}, {Cooldown: -1}}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

func TestGuardStaysTrippedOnAFewSlowRequests(t *testing.T) {
	// Tripped by a full window of slow requests, the guard must not clear when the slow
	// server then serves fewer than MinRequests per window: those few are still slow.
	c := &clock{t: time.Unix(7, 0)}
	g := New(Config{Window: time.Second, TTFTP99: 100 * time.Millisecond, MinRequests: 5, Cooldown: time.Second})
	feed(g, c, 10, time.Second, 500, false)
	if st, _ := g.Evaluate(c.t); !st.Tripped {
		t.Fatal("did not trip")
	}
	for range 5 {
		feed(g, c, 2, time.Second, 500, false)
		if st, _ := g.Evaluate(c.t); !st.Tripped {
			t.Fatalf("cleared with 2 slow live requests per window: %+v", st)
		}
	}
}
