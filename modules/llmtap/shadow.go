package llmtap

import (
	"errors"
	"fmt"

	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/load/workload"
)

// ShadowConfig is one shadow load: synthetic (or trace-replayed) requests that llmtap sends,
// from inside the proxy, through a live route of the same proxy, so that the same handler
// measures them — as traffic class "shadow" ("replay" for a trace) — beside the live traffic
// (JSON `"shadows": [{…}]` of the llmtap app, Caddyfile `shadow <name> { … }` in the llmtap
// global option). Responses are read to their end and discarded.
//
// Each request carries the Llmtap-Shadow header with a mark signed by a key this process drew
// at startup; the handler classifies a request as shadow only when the mark verifies, and
// removes it before proxying, so upstreams never see it. A client sending the header is live
// traffic (counted in llmtap_shadow_marker_forged_total).
//
// A shadow load runs from the moment its config is loaded (after start_after, within its
// window, for its duration) until it is stopped through the admin API (POST
// /llmtap/shadow/<name>/stop), and pauses while the guard rails (GuardConfig) hold it. Loads
// are kept per name across config reloads: a reload with the same config keeps the running
// load untouched; a changed config is applied to it in place, its counters continuing.
//
// Its fields are the workload's (workload.Spec, flattened into the same JSON object), and
// Stopped.
type ShadowConfig struct {
	workload.Spec

	// Stopped loads the shadow stopped: it starts only through POST
	// /llmtap/shadow/<name>/start. It applies when the load is first loaded; a reload keeps a
	// running load's state, whatever this says. Default: false (it starts with the config).
	Stopped bool `json:"stopped,omitempty"`
}

// shadowState is the shadow feature's state in one App: the built loads, the guard settings
// (nil when the App has neither shadow load nor guard block) and the loads it holds.
type shadowState struct {
	cfgs    []shadow.Config
	stopped []bool
	guard   *guardSettings
}

// provisionShadows builds every shadow load's config (bodies, trace) and checks it.
func (a *App) provisionShadows() error {
	st := &a.shadow
	var errs []error
	seen := map[string]bool{}
	for i, sc := range a.Shadows {
		if sc == nil {
			continue
		}
		if seen[sc.Name] {
			errs = append(errs, fmt.Errorf("shadow %d: the name %q is used twice", i, sc.Name))
			continue
		}
		seen[sc.Name] = true
		c, err := shadow.Build(sc.Spec, a.proc.Mark)
		if err != nil {
			errs = append(errs, fmt.Errorf("shadow %q: %w", sc.Name, err))
			continue
		}
		st.cfgs, st.stopped = append(st.cfgs, c), append(st.stopped, sc.Stopped)
	}
	g, err := a.Guard.settings()
	if err != nil {
		errs = append(errs, fmt.Errorf("guard: %w", err))
	}
	if a.Guard != nil || len(st.cfgs) > 0 {
		st.guard = g
	}
	return errors.Join(errs...)
}

// startShadows holds every load of the App (process.HoldShadows): a load no other config runs
// starts (unless it is loaded stopped); one that runs is adopted, and reconfigured when its
// config changed; a load no loaded config names any more is stopped.
func (a *App) startShadows() (func(), error) {
	return a.proc.HoldShadows(a.logger, a.shadow.cfgs, a.shadow.stopped)
}
