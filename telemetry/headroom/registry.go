package headroom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// Config is a handler's passive headroom (JSON `passive_headroom` of http.handlers.llmtap;
// Caddyfile `passive_headroom { … }`): the live requests it measures are observed, and the
// capacity left on each upstream before their mean TTFT reaches TTFTMs is estimated.
type Config struct {
	// TTFTMs is the objective: the mean time to first token, in milliseconds, the upstream
	// must stay within. Required.
	TTFTMs float64 `json:"ttft_ms"`
	// WindowSeconds is the length of one time window, the bootstrap's unit; a shorter window
	// reacts sooner and gives the bootstrap more units, a longer one averages more requests
	// per window. Default: 10.
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// Windows is how many windows the estimate is over (the older ones are forgotten), at
	// most 1,000. Default: 30.
	Windows int `json:"windows,omitempty"`
}

// maxWindows bounds Config.Windows (the memory of a series is Windows × Levels × 64 bytes).
const maxWindows = 1000

// Validate reports what is wrong with c; a nil Config is valid (no passive headroom).
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	if !(c.TTFTMs > 0) || math.IsInf(c.TTFTMs, 0) {
		errs = append(errs, fmt.Errorf("passive_headroom ttft_ms %v: want a positive number of milliseconds", c.TTFTMs))
	}
	if !(c.WindowSeconds >= 0 && c.WindowSeconds <= 3600) {
		errs = append(errs, fmt.Errorf("passive_headroom window_seconds %v: want at most an hour", c.WindowSeconds))
	} else if c.WindowSeconds > 0 && c.WindowSeconds < 0.1 {
		errs = append(errs, fmt.Errorf("passive_headroom window_seconds %v: want at least 0.1", c.WindowSeconds))
	}
	if c.Windows < 0 || c.Windows > maxWindows {
		errs = append(errs, fmt.Errorf("passive_headroom windows %d: want 1 to %d", c.Windows, maxWindows))
	}
	return errors.Join(errs...)
}

func (c *Config) options() Options {
	return Options{Window: time.Duration(c.WindowSeconds * float64(time.Second)), Windows: c.Windows}.withDefaults()
}

type regKey struct {
	window  time.Duration
	windows int
}

type entry struct {
	e    *Estimator
	refs int
	loop *lifecycle.Loop // its Run
}

// Registry holds the process's estimators, one per window setting, each with the goroutine
// that fits it, for as long as a handler holds it. The zero value is ready to use.
type Registry struct {
	mu   sync.Mutex
	ests map[regKey]*entry
}

// Target is one handler's hold on an estimator, with its objective. A nil Target observes
// nothing.
type Target struct {
	g         *Registry
	key       regKey
	e         *Estimator
	objective time.Duration
	once      sync.Once
	load      load
}

// load integrates the handler's requests in flight over time (request·seconds since base), so
// that a request's mean concurrency over its lifetime is the difference of two readings over
// its duration.
type load struct {
	mu   sync.Mutex
	base time.Time
	n    int64
	last time.Duration // since base
	area float64
}

// add changes the requests in flight by d at now and returns the integral up to now.
func (l *load) add(now time.Time, d int64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := now.Sub(l.base)
	if t > l.last {
		l.area += float64(l.n) * (t - l.last).Seconds()
		l.last = t
	}
	l.n += d
	return l.area
}

// Acquire holds the estimator of c's window setting, starting it (and its fitting goroutine)
// when no handler holds it yet; a nil c returns a nil Target. Call Release when done.
func (g *Registry) Acquire(c *Config) (*Target, error) {
	if c == nil {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o := c.options()
	k := regKey{o.Window, o.Windows}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ests == nil {
		g.ests = map[regKey]*entry{}
	}
	en := g.ests[k]
	if en == nil {
		en = &entry{e: New(o)}
		en.loop = lifecycle.Go(en.e.Run)
		g.ests[k] = en
	}
	en.refs++
	return &Target{g: g, key: k, e: en.e, objective: time.Duration(c.TTFTMs * float64(time.Millisecond)), load: load{base: time.Now()}}, nil
}

// Release lets go of the estimator; the last holder stops it. Idempotent; nil-safe.
func (t *Target) Release() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		g := t.g
		g.mu.Lock()
		en := g.ests[t.key]
		en.refs--
		if en.refs == 0 {
			delete(g.ests, t.key)
		}
		g.mu.Unlock()
		if en.refs == 0 {
			_ = en.loop.Close(context.Background()) // a fit is short
		}
	})
}

// Enter counts a request arriving at t0 (every class) among the handler's requests in flight
// and returns the reading Done takes back. Nil-safe.
func (t *Target) Enter(t0 time.Time) float64 {
	if t == nil {
		return 0
	}
	return t.load.add(t0, 1)
}

// Done counts the request Enter returned entered out and observes it: its upstream (host:port,
// empty when none was reached), its concurrency (the handler's mean requests in flight over its
// lifetime, itself included) and its record. Only live requests that streamed a first token
// without error are observed. O(1), no allocation. Nil-safe.
func (t *Target) Done(upstream string, entered float64, rec *record.Record) {
	if t == nil {
		return
	}
	now := time.Now()
	area := t.load.add(now, -1)
	if upstream == "" || rec.Class != record.ClassLive || !rec.OK() || rec.TTFTMs == nil || rec.RequestLatencyMs == nil {
		return
	}
	life := now.Sub(rec.Start).Seconds()
	if life <= 0 {
		return
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	t.e.Observe(upstream, t.objective, max(1, (area-entered)/life), ms(*rec.TTFTMs), ms(*rec.RequestLatencyMs))
}

func (g *Registry) all() []*Estimator {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Estimator, 0, len(g.ests))
	for _, en := range g.ests {
		out = append(out, en.e)
	}
	slices.SortFunc(out, func(a, b *Estimator) int { return int(a.opts.Window - b.opts.Window) })
	return out
}

// ObserveServer hands one scrape of an inference server's page (at url) to every estimator:
// its KV-cache usage (the highest of its models), waiting and running requests (summed).
func (g *Registry) ObserveServer(url string, sm *scrape.ServerMetrics) {
	var kv, waiting, running float64
	for _, m := range sm.Models {
		kv = max(kv, m.KVCacheUsage)
		waiting += m.Waiting
		running += m.Running
	}
	for _, e := range g.all() {
		e.ObserveServer(url, kv, waiting, running)
	}
}

// Estimates returns the latest estimates of every estimator, one per upstream and objective
// (where two window settings track the same pair, the shorter window's).
func (g *Registry) Estimates() []Estimate {
	out := []Estimate{}
	type pair struct {
		u string
		o float64
	}
	seen := map[pair]bool{}
	for _, e := range g.all() {
		for _, est := range e.Estimates() {
			if p := (pair{est.Upstream, est.TTFTObjectiveMs}); !seen[p] {
				seen[p] = true
				out = append(out, est)
			}
		}
	}
	return out
}
