package process

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/load/guard"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/scrape"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Keys of the shared runners. Shadow loads add their name to keyShadow.
const (
	keyGPU      = "gpu"
	keyTimeline = "timeline"
	keyScrape   = "scrape"
	keyGuard    = "guard"
	keyShadow   = "shadow:"
)

// gpuRunner is the process's NVML sampler (a gpu.Runner), shared by every config with GPU
// sampling on and reconfigured in place by each one that adopts it.
type gpuRunner struct {
	*liveLogger
	p   *Process
	run *gpu.Runner
}

// HoldGPU adopts the running sampler, making it sample every interval, or starts one: a
// changed interval stops the running sampler and starts a new one. A host without NVML, or an
// NVML that fails to open, leaves GPU sampling off without an error (logged to l, "no NVML"
// once per process).
func (p *Process) HoldGPU(l *zap.Logger, interval time.Duration) (release func(), err error) {
	return adopt(p, keyGPU, l, p.newGPURunner, func(r *gpuRunner) error { return r.configure(interval) })
}

func (p *Process) newGPURunner(l *liveLogger) *gpuRunner {
	r := &gpuRunner{liveLogger: l, p: p}
	g := &gpu.Runner{
		Open: func() (gpu.Source, error) {
			if p.opts.OpenGPU != nil {
				return p.opts.OpenGPU()
			}
			return gpu.Open()
		},
		OnOpenError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				if p.nvmlAbsentLogged.CompareAndSwap(false, true) {
					r.log().Info("GPU sampling is off: NVML is not available on this host", zap.Error(err))
				}
				return
			}
			// A GPU that fails to open is not a reason to refuse the config: the proxy and its
			// measurements work without GPU data.
			r.log().Error("GPU sampling is off: opening NVML failed", zap.Error(err))
		},
		OnError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				r.log().Warn("GPU sampling stopped: NVML went away", zap.Error(err))
				return
			}
			r.log().Warn("reading a GPU failed", zap.Error(err))
		},
		OnCloseError: func(err error) { r.log().Warn("closing NVML", zap.Error(err)) },
	}
	g.OnSamples = func(s []gpu.Sample) {
		if p.gpu.Load() == g {
			p.Hub.OnGPU(s, p.InFlight())
		}
	}
	r.run = g
	p.gpu.Store(g)
	return r
}

func (r *gpuRunner) configure(interval time.Duration) error {
	if r.run.Configure(interval) {
		r.log().Debug("GPU sampling started", zap.Duration("interval", interval))
	}
	return nil
}

// Close stops sampling when the last config using it is gone.
func (r *gpuRunner) Close(ctx context.Context) error {
	err := r.run.Close(ctx)
	r.p.gpu.CompareAndSwap(r.run, nil)
	if !r.p.nvmlActive() {
		r.p.Hub.ClearGPU()
	}
	return err
}

// GPUSampling reports whether an NVML sampler runs and feeds GPU samples to the hub.
func (p *Process) GPUSampling() bool { return p.nvmlActive() }

// nvmlActive reports whether an NVML sampler feeds the hub, in which case a dcgm-exporter
// scrape's GPU samples are ignored rather than counted twice.
func (p *Process) nvmlActive() bool {
	g := p.gpu.Load()
	return g != nil && g.Active()
}

// timelineRunner is the process's timeline (a timeline.Runner publishing to the hub), shared
// by every config with the timeline on. A config with other window, keep or settle replaces
// the timeline in place; the last config to let go closes it.
type timelineRunner struct {
	*liveLogger
	timeline.Runner
}

// HoldTimeline adopts the running timeline, reconfiguring it with o (its models and in-flight
// count are the process's), or starts one. Every final window is also written to the folders
// the recorders write to.
func (p *Process) HoldTimeline(l *zap.Logger, o timeline.Options) (release func(), err error) {
	o.Models = p.Models // one folding rule with /metrics and the summary
	o.InFlight = p.InFlight
	return adopt(p, keyTimeline, l, func(l *liveLogger) *timelineRunner {
		r := &timelineRunner{liveLogger: l}
		r.Runner = timeline.Runner{Hub: p.Hub, Dirs: p.RecordingDirs, OnFileError: func(dir string, err error) {
			r.log().Error("writing the llmtap timeline file", zap.String("dir", dir), zap.Error(err))
		}}
		return r
	}, func(r *timelineRunner) error { r.Configure(o); return nil })
}

// scrapeRunner is the process's scrapers (a scrape.Pages), shared by every config with scrape
// pages; each config that adopts it brings the set of pages to its own: a reload naming the
// same page, kind and interval keeps it running; the last config to let go closes them.
type scrapeRunner struct {
	*liveLogger
	scrape.Pages
}

// HoldScrapes adopts the scrapers, bringing them to pages, or starts them.
func (p *Process) HoldScrapes(l *zap.Logger, pages []scrape.Page) (release func(), err error) {
	return adopt(p, keyScrape, l, p.newScrapeRunner, func(r *scrapeRunner) error { r.Configure(pages); return nil })
}

func (p *Process) newScrapeRunner(l *liveLogger) *scrapeRunner {
	r := &scrapeRunner{liveLogger: l}
	r.Pages = scrape.Pages{
		OnServer: func(url string, sm *scrape.ServerMetrics) {
			p.Hub.OnServer(url, sm)
			p.Passive.ObserveServer(url, sm)
		},
		// A dcgm page stands in for NVML: its samples are used only while NVML sampling is not
		// running, so no GPU is counted twice.
		OnGPU: func(s []gpu.Sample) {
			if !p.nvmlActive() {
				p.Hub.OnGPU(s, p.InFlight())
			}
		},
		OnGPUStop: func() {
			if !p.nvmlActive() {
				p.Hub.ClearGPU()
			}
		},
		OnError: func(pg scrape.Page, err error) {
			msg := "scraping the inference server's metrics failed"
			if pg.Kind == scrape.KindDCGM {
				msg = "scraping dcgm-exporter failed"
			}
			r.log().Warn(msg, zap.String("url", pg.URL), zap.Error(err))
		},
		OnKindMismatch: func(pg scrape.Page, detected scrape.ServerKind) {
			r.log().Warn("the metrics page is not the kind configured", zap.String("url", pg.URL),
				zap.String("kind", pg.Kind), zap.String("detected", string(detected)))
		},
	}
	return r
}

// guardRunner is the process's guard loop (a guard.Runner), shared by every config with
// shadow load or a guard block; a reload with the same settings keeps the loop (and its
// window) running, other settings replace it. It pauses every shadow load
// ("shadow/<name>") and mirroring ("mirror").
type guardRunner struct {
	*liveLogger
	p    *Process
	loop *guard.Runner
}

// HoldGuard adopts the guard loop, configuring it with c, or starts it.
func (p *Process) HoldGuard(l *zap.Logger, c guard.Config) (release func(), err error) {
	return adopt(p, keyGuard, l, func(l *liveLogger) *guardRunner {
		r := &guardRunner{liveLogger: l, p: p}
		r.loop = &guard.Runner{Targets: &p.guardTargets, OnChange: r.logChange}
		p.guard.Store(r.loop)
		return r
	}, func(r *guardRunner) error { r.loop.Configure(c); return nil })
}

// logChange logs and counts each pause and resume.
func (r *guardRunner) logChange(st guard.State, names []string) {
	fields := []zap.Field{zap.Strings("paused", names), zap.Int64("live_requests", st.LiveRequests),
		zap.Float64("live_ttft_p99_ms", st.LiveTTFTP99Ms), zap.Float64("live_error_rate", st.LiveErrorRate)}
	if st.Tripped {
		reason, _, _ := strings.Cut(st.Reason, " ")
		r.p.metrics.GuardPauses.WithLabelValues(reason).Inc()
		r.log().Warn("guard rails: pausing shadow load and mirroring", append(fields, zap.String("reason", st.Reason),
			zap.Time("clears_at", st.ClearsAt))...)
	} else {
		r.p.metrics.GuardResumes.Inc()
		r.log().Info("guard rails: resuming shadow load and mirroring", fields...)
	}
}

// Close stops the loop, resuming what it paused, when the last config using it is gone.
func (r *guardRunner) Close(ctx context.Context) error {
	r.p.guard.CompareAndSwap(r.loop, nil)
	return r.loop.Close(ctx)
}

// GuardState returns the running guard's state, or nil.
func (p *Process) GuardState() *guard.State {
	if g := p.guard.Load(); g != nil {
		return g.State()
	}
	return nil
}

// shadowEntry is a shadow load held by name: a load outlives the configs that name it as long
// as one of them is loaded.
type shadowEntry struct {
	*shadow.Entry
	p *Process
}

// Close stops the load when the last config naming it is gone.
func (e *shadowEntry) Close(ctx context.Context) error {
	st, err := e.Remove(ctx)
	e.p.Log("shadow").Info("shadow load removed", zap.String("shadow", e.Runner().Name()), zap.Int64("sent", st.Sent), zap.Int64("errors", st.Errors))
	return err
}

// HoldShadows holds every load of cfgs: a load no other config runs starts (unless stopped
// says it is loaded stopped); one that runs is adopted, and reconfigured when its config
// changed. On an error the loads held so far are let go.
func (p *Process) HoldShadows(l *zap.Logger, cfgs []shadow.Config, stopped []bool) (release func(), err error) {
	var held []func()
	release = func() {
		for _, f := range held {
			f()
		}
	}
	for i, c := range cfgs {
		if c.Headroom != nil && c.OnHeadroom == nil {
			// The probe may outlive the config: it logs through the process's logger.
			c.OnHeadroom = func(h shadow.HeadroomReport) {
				p.Log("shadow").Info("headroom probe finished", zap.String("shadow", c.Name),
					zap.Float64("headroom_requests_per_sec", h.HeadroomRequestsPerSec),
					zap.Float64("headroom_output_tokens_per_sec", h.HeadroomOutputTokensPerSec),
					zap.String("verdict", h.Verdict), zap.String("table", h.Table()))
			}
		}
		e, adopted, err := Hold(p, keyShadow+c.Name, func() (*shadowEntry, error) {
			e, err := p.shadows.Add(c)
			if err != nil {
				return nil, err
			}
			if !stopped[i] {
				if err := e.Runner().Start(); err != nil {
					l.Error("starting shadow load", zap.String("shadow", c.Name), zap.Error(err))
				}
			}
			l.Info("shadow load started", zap.String("shadow", c.Name), zap.String("url", c.Source.URL),
				zap.Float64("rate", c.Arrival.Rate), zap.Bool("stopped", stopped[i]))
			return &shadowEntry{Entry: e, p: p}, nil
		})
		if err != nil {
			release()
			return nil, fmt.Errorf("shadow %q: %w", c.Name, err)
		}
		held = append(held, p.letGoOnce(keyShadow+c.Name))
		if !adopted {
			continue
		}
		changed, err := e.Apply(c)
		if err != nil {
			release()
			return nil, fmt.Errorf("shadow %q: %w", c.Name, err)
		}
		if changed {
			l.Info("shadow load reconfigured", zap.String("shadow", c.Name))
		}
	}
	return release, nil
}

// ShadowRunner returns the running load of that name, or nil.
func (p *Process) ShadowRunner(name string) *shadow.Runner { return p.shadows.Get(name) }

// ShadowRunners returns every running load, sorted by name.
func (p *Process) ShadowRunners() []*shadow.Runner { return p.shadows.Sorted() }

// shadowSink gives every finished record to the guard rails and to the headroom probes.
type shadowSink struct{ p *Process }

func (s shadowSink) Consume(r *record.Record) {
	if g := s.p.guard.Load(); g != nil {
		g.Observe(r)
	}
	s.p.shadows.Observe(r)
}

// Closer is a runner held by key: Close stops it when its last holder lets go, bounded by ctx.
type Closer interface {
	Close(ctx context.Context) error
}

// closeTimeout bounds how long letting go of a runner, or stopping the runtime recording,
// waits for it to close (a recorder's last writes, the log exporter's last batches).
const closeTimeout = 10 * time.Second

// holds are the runners shared by holders (configs), by key, each with its count of holds: a
// reference-counted map like Caddy's UsagePool, which this package does not import.
type holds struct {
	mu sync.Mutex
	m  map[string]*held
}

type held struct {
	v     Closer
	refs  int
	ready chan struct{} // closed once v (or err) is set
	err   error
}

// Hold returns the runner of key, creating it with create when none runs; adopted reports
// that it was already running (held by another config), in which case the caller reconfigures
// it in place. Every successful Hold is paired with one LetGo.
func Hold[T Closer](p *Process, key string, create func() (T, error)) (r T, adopted bool, err error) {
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

// LetGo drops one hold on key; the last one closes the runner, waiting up to closeTimeout.
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
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return h.v.Close(ctx)
}

// runner is a runner held across configs, logging through the config that adopted it last.
type runner interface {
	Closer
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
