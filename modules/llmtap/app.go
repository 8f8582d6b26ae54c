package llmtap

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/telemetry/price"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the llmtap Caddy app (JSON `"apps": {"llmtap": {…}}`, Caddyfile global option
// `llmtap { … }`). It owns llmtap's background work — GPU sampling, scraping the inference
// server's metrics, the timeline, shadow load — for as long as a config containing it is loaded.
//
// Reloads: Caddy provisions and starts the new config before it stops and cleans up the old
// one. Each feature of the app therefore keeps its running state in a runner shared across
// configs (held in the process.Process) that the new App adopts, reconfiguring it in place,
// and the old App lets go of without stopping it, so a reload never runs the same work twice
// nor loses its state. The App holds the Process itself the same way (lifetimes.go).
type App struct {
	// Feature configuration: one field per feature, declared here (so the JSON stays one
	// struct) and documented in full beside the feature's code.

	// GPU configures GPU sampling through NVML (gpu.go); on by default.
	GPU *GPUConfig `json:"gpu,omitempty"`
	// Scrape lists the Prometheus pages read on an interval (scrape.go).
	Scrape []ScrapeConfig `json:"scrape,omitempty"`
	// Timeline configures the timeline of fixed windows (timeline.go); on by default.
	Timeline *TimelineConfig `json:"timeline,omitempty"`
	// Shadows are the shadow loads run inside the proxy (shadow.go).
	Shadows []*ShadowConfig `json:"shadows,omitempty"`
	// Guard sets the guard rails that pause shadow load and mirroring (shadow_guard.go).
	Guard *GuardConfig `json:"guard,omitempty"`
	// ListPrices are per-model list prices per million tokens (telemetry/price): a request
	// whose model matches one gets a list_cost beside its GPU-hour cost. Default: none.
	ListPrices []price.List `json:"list_prices,omitempty"`

	logger *zap.Logger
	prices *price.Table // ListPrices compiled
	proc   *process.Process
	shadow shadowState // built at Provision

	// held are the release functions of the runners this App holds, in the order they
	// started; bare is set when a handler loaded the App without config (see Handler).
	held []func()
	bare bool

	// handlers are the handlers of this config, whose streams the App waits for before it
	// lets go of the Process (Cleanup), and dash is the App's hold on the dashboard listener.
	// Caddy provisions a config's modules one at a time, so attach needs no lock.
	handlers []*Handler
	dash     *dashboardServer
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "llmtap",
		New: func() caddy.Module { return new(App) },
	}
}

// Process is the llmtap process state the App holds (nil before Provision).
func (a *App) Process() *process.Process { return a.proc }

// Provision attaches the app to the measurement engine, registers llmtap's metrics and builds
// the shadow loads.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	p, err := acquireProcess()
	if err != nil {
		return fmt.Errorf("starting the measurement engine: %w", err)
	}
	a.proc = p
	if err := p.Register(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering llmtap metrics: %w", err)
	}
	if err := a.provisionShadows(); err != nil {
		return fmt.Errorf("llmtap shadow: %w", err)
	}
	if a.prices, err = price.Compile(a.ListPrices); err != nil {
		return fmt.Errorf("llmtap list_prices: %w", err)
	}
	return nil
}

// Validate checks every feature's configuration.
func (a *App) Validate() error {
	var errs []error
	add := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("llmtap %s: %w", name, err))
		}
	}
	add("gpu", a.GPU.validate())
	add("scrape", validateScrapes(a))
	add("timeline", a.Timeline.validate())
	return errors.Join(errs...)
}

// Start starts every feature's background work (or adopts the work of the config being
// replaced). A feature that fails to start stops the ones started before it.
func (a *App) Start() error {
	if a.bare {
		return nil
	}
	a.proc.Hub.SetListPrices(a.prices) // each record's list cost (telemetry/price)
	a.proc.Hub.SetPrice(a.GPU.price()) // each record's cost (telemetry/timeline)
	// The timeline first (it takes the samples and scrapes), then the GPU sampler and the
	// scrapers, then the guard rails and the shadow loads they hold; Stop goes in reverse.
	for _, f := range []struct {
		name  string
		start func() (func(), error)
	}{{"timeline", a.startTimeline}, {"gpu", a.startGPU}, {"scrape", a.startScrapes}, {"guard", a.startGuard}, {"shadow", a.startShadows}} {
		release, err := f.start()
		if err != nil {
			_ = a.Stop()
			return fmt.Errorf("llmtap %s: %w", f.name, err)
		}
		if release != nil {
			a.held = append(a.held, release)
		}
	}
	return nil
}

// Stop lets go of every feature's background work; what the next config adopted goes on.
func (a *App) Stop() error {
	for i := len(a.held) - 1; i >= 0; i-- {
		a.held[i]()
	}
	a.held = nil
	return nil
}

// attach makes h one of the handlers whose streams the App waits for before it lets go of the
// Process; the first one takes a hold on the dashboard listener (dashboard.go).
func (a *App) attach(h *Handler) {
	a.handlers = append(a.handlers, h)
	if a.dash == nil {
		a.dash = acquireDashboard(a.proc, h.logger)
	}
}

// Cleanup lets go of the Process once the streams of the App's handlers have ended: Caddy
// cleans up a config as soon as its servers stop accepting, while their requests go on.
// Without streams in flight (or when the process exits) that is now; otherwise a goroutine
// waits for them, at most drainTimeout. The Process closes, and a recorder, when the last
// config using it is gone.
func (a *App) Cleanup() error {
	if a.proc == nil {
		return nil
	}
	idle := true
	for _, h := range a.handlers {
		h.releaseMirror() // before the Process, which its copies' records go to
		idle = idle && h.streams.Active() == 0
	}
	if a.dash != nil {
		_ = a.proc.LetGo(keyDashboard)
	}
	if idle || caddy.Exiting() {
		a.drainWithin(drainTimeout)
	} else {
		go a.drainWithin(drainTimeout)
	}
	return nil
}

// drainWithin waits, at most timeout, for the handlers' streams to end, lets the pipeline
// deliver their records to the recorders, then lets go of the recorders and the Process.
func (a *App) drainWithin(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, h := range a.handlers {
		if !h.streams.Wait(deadline) {
			h.streams.Abandon()
			logger("drain").Warn("streams outlived their unloaded config by the drain time; their records are dropped",
				zap.Int64("streams", h.streams.Active()), zap.Duration("drain_timeout", timeout))
		}
	}
	a.proc.Tap().Flush()
	for _, h := range a.handlers { // what each holds beside the Process
		h.releaseRecording()
		h.passive.Release()
	}
	releaseProcess()
}

// Interface guards.
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)

// TimelineConfig configures the timeline (JSON `"timeline"` of the llmtap app, Caddyfile
// `timeline { … }` in the llmtap global option): fixed windows that put the request metrics
// of every traffic class and model beside the GPU samples and the inference server's metrics
// of the same period. It is on whenever the llmtap app is loaded; GET /llmtap/timeline on the
// admin listener serves it, and when a handler records (its record option) every final window
// is also written to timeline-<UTC start>.jsonl in the recording folder (mode 0600).
// telemetry/timeline documents which window each figure lands in.
//
// A reload with the same window, keep and settle keeps the running timeline and its history;
// changing one of them starts a new, empty timeline.
type TimelineConfig struct {
	// Window is the length of one window. Default: 1s.
	Window caddy.Duration `json:"window,omitempty"`

	// Keep is how much history is kept and served (Keep/Window windows). Default: 15m.
	Keep caddy.Duration `json:"keep,omitempty"`

	// Settle is how long after its end a window is final: written to timeline.jsonl, and
	// marked "final" in the route. Streams that overlapped a window and end later still
	// revise it until then (and are counted in its "late" field after). Default: 10s.
	Settle caddy.Duration `json:"settle,omitempty"`

	// Off turns the timeline off (the route then answers 404). Default: false.
	Off bool `json:"off,omitempty"`
}

func (c *TimelineConfig) options() timeline.Options {
	var o timeline.Options
	if c != nil {
		o.Window, o.Keep, o.Settle = time.Duration(c.Window), time.Duration(c.Keep), time.Duration(c.Settle)
	}
	return o
}

func (c *TimelineConfig) validate() error {
	if c == nil {
		return nil
	}
	return c.options().Validate()
}

func (a *App) startTimeline() (func(), error) {
	if a.Timeline != nil && a.Timeline.Off {
		return nil, nil
	}
	return a.proc.HoldTimeline(a.logger, a.Timeline.options())
}
