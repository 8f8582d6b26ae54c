package shadow

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Registry is the shadow loads of a process by name. It does not decide their lifetime: its
// owner (in the proxy, a pool of runners held across config reloads) adds an entry when a
// load first starts and removes it when the last config naming the load is gone; meanwhile a
// new config may apply its own version of the load to the entry in place. Its methods are
// safe for concurrent use; Observe and Running take no lock.
type Registry struct {
	// OnAdd, when set, is called with each new runner; the function it returns is called when
	// the runner is removed (in the proxy: the runner joins the guard rails' targets).
	OnAdd func(*Runner) (undo func())

	mu   sync.Mutex
	m    map[string]*Entry
	list atomic.Pointer[[]*Runner]
}

// Entry is one load of a Registry.
type Entry struct {
	reg  *Registry
	name string
	r    *Runner
	cfg  Config // of the last Add or Apply; only the owner's configuring goroutine uses it
	undo func()
}

// Add creates the runner of c (not started) and registers it under c.Name, replacing the
// entry of that name, if any, in the index (that entry's Remove then leaves the new one).
func (g *Registry) Add(c Config) (*Entry, error) {
	r, err := New(c)
	if err != nil {
		return nil, err
	}
	e := &Entry{reg: g, name: c.Name, r: r, cfg: c, undo: func() {}}
	if g.OnAdd != nil {
		e.undo = g.OnAdd(r)
	}
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*Entry{}
	}
	g.m[c.Name] = e
	g.publishLocked()
	g.mu.Unlock()
	return e, nil
}

// Runner returns the entry's runner.
func (e *Entry) Runner() *Runner { return e.r }

// Apply reconfigures the running load with c unless c would run the same load as the config
// it runs, and reports whether it did.
func (e *Entry) Apply(c Config) (bool, error) {
	if SameConfig(e.cfg, c) {
		return false, nil
	}
	if err := e.r.Reconfigure(c); err != nil {
		return false, err
	}
	e.cfg = c
	return true, nil
}

// Remove unregisters the load, closes it (its requests in flight cancelled; see Runner.Close)
// and returns its last status.
func (e *Entry) Remove(ctx context.Context) (Status, error) {
	g := e.reg
	g.mu.Lock()
	if g.m[e.name] == e { // not a successor of the same name, added meanwhile
		delete(g.m, e.name)
	}
	g.publishLocked()
	g.mu.Unlock()
	e.undo()
	st := e.r.Status()
	return st, e.r.Close(ctx)
}

func (g *Registry) publishLocked() {
	l := make([]*Runner, 0, len(g.m))
	for _, e := range g.m {
		l = append(l, e.r)
	}
	g.list.Store(&l)
}

// Get returns the load of that name, or nil.
func (g *Registry) Get(name string) *Runner {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.m[name]; e != nil {
		return e.r
	}
	return nil
}

// Sorted returns every load, sorted by name.
func (g *Registry) Sorted() []*Runner {
	l := slices.Clone(g.Running())
	slices.SortFunc(l, func(a, b *Runner) int { return strings.Compare(a.Name(), b.Name()) })
	return l
}

// Running returns every load, in no order, without taking the lock; the caller must not
// change the slice.
func (g *Registry) Running() []*Runner {
	if l := g.list.Load(); l != nil {
		return *l
	}
	return nil
}

// Observe gives a finished record to every load (for the headroom probes).
func (g *Registry) Observe(r *record.Record) {
	for _, rn := range g.Running() {
		rn.Observe(r)
	}
}

// SameConfig reports whether two configs would run the same load: equal but for their
// callbacks (a closure is never equal to another), with sources of the same URL, key, header
// and bodies.
func SameConfig(a, b Config) bool {
	sa, sb := a.Source, b.Source
	a.Source, b.Source = nil, nil
	a.OnHeadroom, b.OnHeadroom = nil, nil
	a.Ready, b.Ready = nil, nil
	return reflect.DeepEqual(a, b) && sa.URL == sb.URL && sa.Key == sb.Key &&
		reflect.DeepEqual(sa.Header, sb.Header) && reflect.DeepEqual(sa.Bodies, sb.Bodies)
}
