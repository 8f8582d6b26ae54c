package process

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// Destructor is a runner held by key: Destruct stops it when its last holder lets go.
type Destructor interface{ Destruct() error }

// holds are the runners shared by holders (configs), by key, each with its count of holds: a
// reference-counted map like Caddy's UsagePool, which this package does not import.
type holds struct {
	mu sync.Mutex
	m  map[string]*held
}

type held struct {
	v     Destructor
	refs  int
	ready chan struct{} // closed once v (or err) is set
	err   error
}

// Hold returns the runner of key, creating it with create when none runs; adopted reports
// that it was already running (held by another config), in which case the caller reconfigures
// it in place. Every successful Hold is paired with one LetGo.
func Hold[T Destructor](p *Process, key string, create func() (T, error)) (r T, adopted bool, err error) {
	p.holds.mu.Lock()
	if h, ok := p.holds.m[key]; ok {
		h.refs++
		p.holds.mu.Unlock()
		<-h.ready
		if h.err != nil {
			return r, false, h.err
		}
		return h.v.(T), true, nil
	}
	h := &held{refs: 1, ready: make(chan struct{})}
	p.holds.m[key] = h
	p.holds.mu.Unlock()
	v, err := create()
	if err != nil {
		p.holds.mu.Lock()
		delete(p.holds.m, key)
		p.holds.mu.Unlock()
		h.err = err
		close(h.ready)
		return r, false, err
	}
	h.v = v
	close(h.ready)
	return v, false, nil
}

// LetGo drops one hold on key; the last one destroys the runner (its Destruct).
func (p *Process) LetGo(key string) error {
	p.holds.mu.Lock()
	h, ok := p.holds.m[key]
	if !ok {
		p.holds.mu.Unlock()
		return nil
	}
	h.refs--
	if h.refs > 0 {
		p.holds.mu.Unlock()
		return nil
	}
	delete(p.holds.m, key)
	p.holds.mu.Unlock()
	<-h.ready
	if h.err != nil || h.v == nil {
		return nil
	}
	return h.v.Destruct()
}

// runner is a runner held across configs, logging through the config that adopted it last.
type runner interface {
	Destructor
	setLogger(*zap.Logger)
}

// adopt holds the runner of key — creating it with create when none runs —, points its logger
// at l and configures it; when configure fails it lets go again. release lets go.
func adopt[T runner](p *Process, key string, l *zap.Logger, create func(*liveLogger) T, configure func(T) error) (release func(), err error) {
	r, _, err := Hold(p, key, func() (T, error) { return create(newLiveLogger(l)), nil })
	if err != nil {
		return nil, err
	}
	r.setLogger(l)
	if err := configure(r); err != nil {
		_ = p.LetGo(key)
		return nil, err
	}
	return p.letGoOnce(key), nil
}

// letGoOnce returns a function that lets go of key the first time it is called.
func (p *Process) letGoOnce(key string) func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			_ = p.LetGo(key)
		}
	}
}

// liveLogger is the logger of a long-lived runner. Caddy closes a config's log writers when it
// unloads the config, so a runner that outlives the config that created it logs through the
// logger of the last config that adopted it: each adoption sets it.
type liveLogger struct{ p atomic.Pointer[zap.Logger] }

func newLiveLogger(l *zap.Logger) *liveLogger {
	ll := new(liveLogger)
	ll.setLogger(l)
	return ll
}

func (l *liveLogger) setLogger(z *zap.Logger) {
	if z == nil {
		z = zap.NewNop()
	}
	l.p.Store(z)
}

func (l *liveLogger) log() *zap.Logger { return l.p.Load() }
