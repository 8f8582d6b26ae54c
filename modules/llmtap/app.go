package llmtap

import (
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/price"
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
// configs (lifetimes.go) that the new App adopts, reconfiguring it in place, and the old App
// lets go of without stopping it, so a reload never runs the same work twice nor loses its
// state. The measurement engine is held the same way (engine.go).
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
	engine *engine

	// The runners this App holds, nil when the feature is off.
	timeline *timelineRunner
	gpu      *gpuRunner
	scrape   *scrapeRunner
	guard    *guardRunner
	shadow   shadowState // built at Provision, its loads held from Start
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "llmtap",
		New: func() caddy.Module { return new(App) },
	}
}

// appFeature is one piece of background work of the App: its start and stop steps.
type appFeature struct {
	name  string
	start func() error
	stop  func()
}

// features lists the App's features in the order they start: the timeline first (it takes
// the samples and scrapes), then the GPU sampler and the scrapers, then the guard rails and the
// shadow loads they hold. They stop in the reverse order.
func (a *App) features() []appFeature {
	return []appFeature{
		{"timeline", a.startTimeline, a.stopTimeline},
		{"gpu", a.startGPU, a.stopGPU},
		{"scrape", a.startScrapes, a.stopScrapes},
		{"guard", a.startGuard, a.stopGuard},
		{"shadow", a.startShadows, a.stopShadows},
	}
}

// Provision attaches the app to the measurement engine, registers llmtap's metrics and builds
// the shadow loads.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	e, err := acquireEngine()
	if err != nil {
		return fmt.Errorf("starting the measurement engine: %w", err)
	}
	a.engine = e
	if err := registerCollectors(ctx.GetMetricsRegistry()); err != nil {
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
	proc.hub.SetListPrices(a.prices) // each record's list cost (telemetry/price)
	fs := a.features()
	for i, f := range fs {
		if err := f.start(); err != nil {
			for j := i - 1; j >= 0; j-- {
				fs[j].stop()
			}
			return fmt.Errorf("llmtap %s: %w", f.name, err)
		}
	}
	return nil
}

// Stop lets go of every feature's background work; what the next config adopted goes on.
func (a *App) Stop() error {
	fs := a.features()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i].stop()
	}
	return nil
}

// Cleanup lets go of the app's hold on the measurement engine.
func (a *App) Cleanup() error {
	if a.engine != nil {
		a.engine = nil
		releaseEngine()
	}
	return nil
}

// Interface guards.
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
