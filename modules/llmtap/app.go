package llmtap

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/tap"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the llmtap Caddy app (JSON `"apps": {"llmtap": {…}}`, Caddyfile global option
// `llmtap { … }`). It owns llmtap's background work — GPU sampling, scraping the inference
// server's metrics, the timeline, shadow load — for as long as a config containing it is loaded.
//
// Reloads: Caddy provisions and starts the new config before it stops and cleans up the old
// one. Each feature of the app therefore keeps its running state in a process-wide runner that
// the new App adopts (reconfiguring it in place) and the old App releases without stopping, so a
// reload never runs the same work twice nor loses its state. The measurement engine is held
// the same way (see engine.go).
//
// Features live in their own files and register themselves with registerAppFeature: the
// Caddyfile subdirective they parse, and their Provision/Start/Stop/Cleanup steps.
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

	ctx    caddy.Context
	logger *zap.Logger
	tap    *tap.Tap

	// state holds each feature's per-App state, keyed by feature name.
	state map[string]any
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "llmtap",
		New: func() caddy.Module { return new(App) },
	}
}

// appFeature is one piece of background work owned by the App. Every step is optional.
type appFeature struct {
	// name identifies the feature (and its state in App.state).
	name string
	// subdirectives are the Caddyfile subdirectives of the global option that this feature
	// parses; parse is called with the dispenser on the subdirective's name.
	subdirectives []string
	parse         func(a *App, d *caddyfile.Dispenser) error
	provision     func(a *App, ctx caddy.Context) error
	validate      func(a *App) error
	start         func(a *App) error
	stop          func(a *App) error
	cleanup       func(a *App) error
}

var (
	appFeaturesMu sync.Mutex
	appFeatures   []appFeature
)

// registerAppFeature adds a feature to every App; call it from an init function.
func registerAppFeature(f appFeature) {
	appFeaturesMu.Lock()
	defer appFeaturesMu.Unlock()
	appFeatures = append(appFeatures, f)
	sort.Slice(appFeatures, func(i, j int) bool { return appFeatures[i].name < appFeatures[j].name })
}

func features() []appFeature {
	appFeaturesMu.Lock()
	defer appFeaturesMu.Unlock()
	return append([]appFeature(nil), appFeatures...)
}

// State returns the per-App state of the named feature, or nil.
func (a *App) featureState(name string) any { return a.state[name] }

func (a *App) setFeatureState(name string, v any) {
	if a.state == nil {
		a.state = make(map[string]any)
	}
	a.state[name] = v
}

// Provision attaches the app to the measurement engine and provisions every feature.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	e, err := acquireEngine(a.logger)
	if err != nil {
		return fmt.Errorf("starting the measurement engine: %w", err)
	}
	a.tap = e.tap
	for _, f := range features() {
		if f.provision == nil {
			continue
		}
		if err := f.provision(a, ctx); err != nil {
			return fmt.Errorf("llmtap %s: %w", f.name, err)
		}
	}
	return nil
}

// Validate checks every feature's configuration.
func (a *App) Validate() error {
	var errs []error
	for _, f := range features() {
		if f.validate == nil {
			continue
		}
		if err := f.validate(a); err != nil {
			errs = append(errs, fmt.Errorf("llmtap %s: %w", f.name, err))
		}
	}
	return errors.Join(errs...)
}

// Start starts every feature's background work (or adopts the work of the config being
// replaced). A feature that fails to start stops the ones started before it.
func (a *App) Start() error {
	fs := features()
	for i, f := range fs {
		if f.start == nil {
			continue
		}
		if err := f.start(a); err != nil {
			for j := i - 1; j >= 0; j-- {
				if fs[j].stop != nil {
					_ = fs[j].stop(a)
				}
			}
			return fmt.Errorf("llmtap %s: %w", f.name, err)
		}
	}
	return nil
}

// Stop stops every feature's background work that the next config did not adopt.
func (a *App) Stop() error {
	var errs []error
	fs := features()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].stop == nil {
			continue
		}
		if err := fs[i].stop(a); err != nil {
			errs = append(errs, fmt.Errorf("llmtap %s: %w", fs[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// Cleanup releases the features' resources and the app's hold on the measurement engine.
func (a *App) Cleanup() error {
	var errs []error
	fs := features()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].cleanup == nil {
			continue
		}
		if err := fs[i].cleanup(a); err != nil {
			errs = append(errs, fmt.Errorf("llmtap %s: %w", fs[i].name, err))
		}
	}
	if a.tap != nil {
		releaseEngine()
		a.tap = nil
	}
	return errors.Join(errs...)
}

// UnmarshalCaddyfile sets up the app from the Caddyfile global option:
//
//	llmtap {
//	    <subdirective> …
//	}
//
// Each subdirective belongs to one feature (gpu, scrape, timeline, shadow, …).
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	byName := make(map[string]appFeature)
	var names []string
	for _, f := range features() {
		for _, s := range f.subdirectives {
			byName[s] = f
			names = append(names, s)
		}
	}
	sort.Strings(names)
	for d.NextBlock(0) {
		f, ok := byName[d.Val()]
		if !ok {
			return d.Errf("unknown llmtap global subdirective %q; expected one of %v", d.Val(), names)
		}
		if err := f.parse(a, d); err != nil {
			return err
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.App             = (*App)(nil)
	_ caddy.Provisioner     = (*App)(nil)
	_ caddy.Validator       = (*App)(nil)
	_ caddy.CleanerUpper    = (*App)(nil)
	_ caddyfile.Unmarshaler = (*App)(nil)
)
