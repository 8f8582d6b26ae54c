// Package guard decides when llmtap's own load (shadow load, mirroring) must step aside for live
// traffic: over a sliding window it watches live time to first token and live errors, and
// every response's status, and trips when a limit is crossed; after a cool-down without any
// limit crossed it clears. A [Guard] holds no clock and starts no goroutine: callers pass the
// time to Observe and Evaluate, so tests drive it on a fake clock, and whoever owns it applies
// its decisions (see [Targets]). A [Runner] is such an owner: it evaluates a Guard on a ticker
// in a goroutine of its own and applies each change to its Targets; Configure starts or
// reconfigures it and Close(ctx) stops it, llmtap's one lifecycle (internal/lifecycle).
package guard

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// Config sets the limits. The zero value trips only on 429 and 503 responses.
type Config struct {
	// Window is the span of the sliding window the live figures are taken over (default 10 s).
	Window time.Duration
	// TTFTP99 is the limit on the live requests' 99th percentile time to first token over the
	// window; zero means no limit.
	TTFTP99 time.Duration
	// ErrorRate is the limit on the fraction of live requests in the window that failed on the
	// server's side (5xx, a broken or truncated stream, no response); zero means no limit.
	ErrorRate float64
	// MinRequests is how many live requests the window must hold before the TTFT and error
	// limits can trip the guard, so that two slow requests at night do not (default 10). While
	// it is tripped, any live request in the window is judged: it clears only when the live
	// requests seen are within the limits (or none were seen) for the cool-down.
	MinRequests int
	// Statuses are the response statuses that trip the guard at once when the upstream returns
	// one to any request, live or shadow (default 429 and 503: the server says it is full);
	// the cool-down then runs from that response. An empty non-nil slice disables the rule.
	Statuses []int
	// Cooldown is how long every limit must have held, after the last time one was crossed,
	// before the guard clears (default 30 s).
	Cooldown time.Duration
}

const (
	defaultWindow      = 10 * time.Second
	defaultCooldown    = 30 * time.Second
	defaultMinRequests = 10
	slots              = 10
)

// withDefaults fills in the defaults.
func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = defaultWindow
	}
	if c.Cooldown <= 0 {
		c.Cooldown = defaultCooldown
	}
	if c.MinRequests <= 0 {
		c.MinRequests = defaultMinRequests
	}
	if c.Statuses == nil {
		c.Statuses = []int{429, 503}
	}
	return c
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Window < 0 || c.Cooldown < 0 || c.TTFTP99 < 0 || c.MinRequests < 0 {
		errs = append(errs, errors.New("window, cooldown, ttft_p99 and min_requests must not be negative"))
	}
	if c.Window > 0 && c.Window < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("window %v: want at least 100ms", c.Window))
	}
	if math.IsNaN(c.ErrorRate) || c.ErrorRate < 0 || c.ErrorRate > 1 {
		errs = append(errs, fmt.Errorf("error_rate %v: want a fraction in [0, 1]", c.ErrorRate))
	}
	for _, s := range c.Statuses {
		if s < 100 || s > 599 {
			errs = append(errs, fmt.Errorf("status %d: want an HTTP status 100-599", s))
		}
	}
	return errors.Join(errs...)
}

// Reasons the guard trips, as they appear in logs, counters and status.
const (
	ReasonTTFT   = "live_ttft_p99"
	ReasonErrors = "live_error_rate"
	ReasonStatus = "upstream_status"
)

// State is what the guard reports.
type State struct {
	// Tripped is true while shadow load and mirroring should be paused.
	Tripped bool `json:"tripped"`
	// Reason is the last limit found crossed (live_ttft_p99, live_error_rate, upstream_status),
	// with the figure, e.g. "live_ttft_p99 812ms > 500ms"; kept after the guard clears.
	Reason string `json:"reason,omitempty"`
	// Since is when it last tripped or cleared.
	Since time.Time `json:"since,omitzero"`
	// ClearsAt is, while tripped, the earliest time it can clear (the last limit crossing plus
	// the cool-down).
	ClearsAt time.Time `json:"clears_at,omitzero"`
	// Trips and Clears count the transitions since the guard was made.
	Trips  uint64 `json:"trips"`
	Clears uint64 `json:"clears"`
	// TripsByReason counts trips by reason.
	TripsByReason map[string]uint64 `json:"trips_by_reason"`
	// Live figures over the window at the last evaluation.
	LiveRequests  int64   `json:"live_requests"`
	LiveTTFTP99Ms float64 `json:"live_ttft_p99_ms"`
	LiveErrorRate float64 `json:"live_error_rate"`
	// Window and Cooldown are the configured spans, for display.
	Window   string `json:"window"`
	Cooldown string `json:"cooldown"`
}

// Guard evaluates the limits. It is safe for concurrent use.
type Guard struct {
	mu  sync.Mutex
	cfg Config

	ttft *stats.Hist
	// live request and failure counts per slot of the window, by slot epoch
	slot      time.Duration
	base      time.Time
	started   bool
	epochs    [slots]int64
	reqs      [slots]int64
	fails     [slots]int64
	statusHit time.Time // last tripping status seen
	statusVal int

	st       State
	lastBad  time.Time
	byReason map[string]uint64
}

// New returns a guard with cfg's limits (defaults filled in).
func New(cfg Config) *Guard {
	cfg = cfg.withDefaults()
	g := &Guard{cfg: cfg, byReason: map[string]uint64{}}
	g.slot = cfg.Window / slots
	g.ttft = stats.NewHist(stats.HistOptions{Window: cfg.Window, Slots: slots})
	g.st.Window, g.st.Cooldown = cfg.Window.String(), cfg.Cooldown.String()
	return g
}

// Config returns the limits in force, defaults filled in.
func (g *Guard) Config() Config { return g.cfg }

func (g *Guard) epoch(now time.Time) int64 {
	if !g.started {
		g.base, g.started = now, true
	}
	d := now.Sub(g.base)
	e := int64(d / g.slot)
	if d < 0 {
		e--
	}
	return e
}

func (g *Guard) slotOf(e int64) int {
	i := int(e % slots)
	if i < 0 {
		i += slots
	}
	if g.epochs[i] != e {
		g.epochs[i], g.reqs[i], g.fails[i] = e, 0, 0
	}
	return i
}

// Observation is one finished request as the guard sees it.
type Observation struct {
	// Live is true for live traffic; other classes count only for the status rule.
	Live bool
	// Status is the HTTP status (0 when none arrived).
	Status int
	// Failed is true when the request failed on the server's side: a 5xx, a broken or
	// truncated stream, no response. Client errors (4xx other than the tripping statuses) and
	// client cancels are not the server suffering.
	Failed bool
	// TTFTMs is the time to first token in ms, when HasTTFT.
	TTFTMs  float64
	HasTTFT bool
}

// Observe adds one finished request, seen at now.
func (g *Guard) Observe(now time.Time, o Observation) {
	if o.Live && o.HasTTFT {
		g.ttft.Record(now, o.TTFTMs) // a Hist has its own lock
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if slices.Contains(g.cfg.Statuses, o.Status) {
		g.statusHit, g.statusVal = now, o.Status
	}
	if !o.Live {
		return
	}
	i := g.slotOf(g.epoch(now))
	g.reqs[i]++
	if o.Failed {
		g.fails[i]++
	}
}

// window sums the live counts of the slots inside the window ending at now.
func (g *Guard) window(now time.Time) (reqs, fails int64) {
	e := g.epoch(now)
	for i := range slots {
		if g.epochs[i] > e-slots && g.epochs[i] <= e {
			reqs += g.reqs[i]
			fails += g.fails[i]
		}
	}
	return reqs, fails
}

// Evaluate judges the window ending at now and returns the state, with changed true when the
// guard tripped or cleared in this call.
func (g *Guard) Evaluate(now time.Time) (st State, changed bool) {
	win, _ := g.ttft.Snapshot(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	reqs, fails := g.window(now)
	g.st.LiveRequests = reqs
	g.st.LiveTTFTP99Ms = 0
	if win.Count > 0 {
		g.st.LiveTTFTP99Ms = win.P99
	}
	g.st.LiveErrorRate = 0
	if reqs > 0 {
		g.st.LiveErrorRate = float64(fails) / float64(reqs)
	}
	var reason string
	bad := now
	// MinRequests gates tripping only: while tripped, any live request counts, so that a slow
	// trickle of live traffic keeps the load paused instead of looking like no evidence.
	judged := reqs >= int64(g.cfg.MinRequests) || (g.st.Tripped && reqs > 0)
	switch {
	case !g.statusHit.IsZero() && now.Sub(g.statusHit) < g.cfg.Cooldown:
		// A tripping status is an event, not a level: the cool-down runs from the response
		// that carried it.
		reason, bad = fmt.Sprintf("%s %d", ReasonStatus, g.statusVal), g.statusHit
	case judged && g.cfg.TTFTP99 > 0 && win.Count > 0 && win.P99 > float64(g.cfg.TTFTP99)/1e6:
		reason = fmt.Sprintf("%s %.0fms > %v", ReasonTTFT, win.P99, g.cfg.TTFTP99)
	case judged && g.cfg.ErrorRate > 0 && g.st.LiveErrorRate > g.cfg.ErrorRate:
		reason = fmt.Sprintf("%s %.3f > %v", ReasonErrors, g.st.LiveErrorRate, g.cfg.ErrorRate)
	}
	if reason != "" {
		if bad.After(g.lastBad) {
			g.lastBad = bad
		}
		g.st.Reason = reason // while tripped, the latest crossing
		if !g.st.Tripped {
			g.st.Tripped, g.st.Since = true, now
			g.st.Trips++
			key, _, _ := strings.Cut(reason, " ")
			g.byReason[key]++
			changed = true
		}
	} else if g.st.Tripped && now.Sub(g.lastBad) >= g.cfg.Cooldown {
		g.st.Tripped, g.st.Since = false, now
		g.st.Clears++
		changed = true
	}
	g.st.ClearsAt = time.Time{}
	if g.st.Tripped {
		g.st.ClearsAt = g.lastBad.Add(g.cfg.Cooldown)
	}
	st = g.st
	st.TripsByReason = make(map[string]uint64, len(g.byReason))
	for k, v := range g.byReason {
		st.TripsByReason[k] = v
	}
	return st, changed
}

// Pausable is what the guard's owner pauses when the guard trips and resumes when it clears:
// a shadow load runner, the mirror's gate (mirror.Gate has exactly these methods).
// Pause and Resume report whether the state changed; both must be safe to call at any time.
type Pausable interface {
	Pause(reason string) bool
	Resume() bool
}

// Targets is a set of named Pausables that follow one guard. It is safe for concurrent use.
type Targets struct {
	mu      sync.Mutex
	targets map[string]Pausable
	tripped bool
	reason  string
}

// Add adds p under name (replacing any other of that name); a target added while the guard
// is tripped is paused at once. It returns the function that removes it again.
func (t *Targets) Add(name string, p Pausable) (remove func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.targets == nil {
		t.targets = map[string]Pausable{}
	}
	t.targets[name] = p
	if t.tripped {
		p.Pause(t.reason)
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.targets[name] == p {
			delete(t.targets, name)
		}
	}
}

// Apply pauses (tripped) or resumes every target and returns the names of those whose state
// changed, sorted.
func (t *Targets) Apply(tripped bool, reason string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tripped, t.reason = tripped, reason
	var changed []string
	for name, p := range t.targets {
		var ok bool
		if tripped {
			ok = p.Pause(reason)
		} else {
			ok = p.Resume()
		}
		if ok {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed
}
