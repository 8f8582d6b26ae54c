// Package slo measures the attainment of service-level objectives on live traffic: which
// requests meet their model's TTFT, ITL and latency thresholds (with the definitions of AIPerf's
// goodput, telemetry/stats.Good), as monotonic counters for Prometheus (attainment and
// error-budget burn rates over any window are then computed by PromQL) and as attainment and
// goodput over rolling windows for the admin API. It imports neither Caddy nor zap.
package slo

import (
	"errors"
	"fmt"
	"math"
	"path"
	"unicode/utf8"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// The objectives a request is counted against; "all" is goodput's: every threshold the SLO
// sets at once.
const (
	ObjTTFT    = "ttft"
	ObjITL     = "itl"
	ObjLatency = "latency"
	ObjAll     = "all"
)

// DefaultTarget is the attainment objective of an SLO that states none.
const DefaultTarget = 0.99

// MaxObjectives bounds the SLOs of one handler, MaxModels the model (and the tenant) selectors
// of one SLO and
// MaxName the length of an SLO's name, in bytes.
const (
	MaxObjectives = 64
	MaxModels     = 256
	MaxName       = 128
)

// Objective is one SLO: the thresholds the requests for some models should meet, and the
// share of them that should meet them.
type Objective struct {
	// Name identifies the SLO in metrics (the slo label) and in the admin API. Two handlers
	// that use the same name share its counters. Default: the first model selector, or
	// "default" when the SLO selects every model.
	Name string `json:"name,omitempty"`

	// Models selects the requests the SLO applies to by the record's model: each entry is an
	// exact model name or a shell pattern (path.Match syntax, e.g. "llama-*"). Empty selects
	// every model. A request is counted against the first SLO of the handler that selects it
	// (by model and tenant), and against none when no SLO does.
	Models []string `json:"models,omitempty"`

	// Tenants selects the requests by the record's tenant (the handler's tenant option) the
	// same way: exact names or shell patterns; empty selects every tenant, a request without
	// one included. The counters stay per (SLO, model): give each tenant its own SLO to count
	// it apart.
	Tenants []string `json:"tenants,omitempty"`

	// TTFTMs is the time to first token, in milliseconds, a request must not exceed; a
	// request without a first token (non-streaming, or failed) misses it. 0: no TTFT
	// objective.
	TTFTMs float64 `json:"ttft_ms,omitempty"`

	// ITLMs is the mean inter-token latency of a request ((latency − TTFT) / (output tokens −
	// 1), AIPerf's definition), in milliseconds, it must not exceed; a request with fewer than
	// two output tokens misses it. 0: no ITL objective.
	ITLMs float64 `json:"itl_ms,omitempty"`

	// LatencyMs is the end-to-end request latency, in milliseconds, a request must not
	// exceed. 0: no latency objective.
	LatencyMs float64 `json:"latency_ms,omitempty"`

	// Target is the attainment objective: the share of requests, in (0, 1), that should meet
	// every threshold. The error budget is 1 − Target, and burn rates are measured against
	// it. Default: 0.99.
	Target float64 `json:"target,omitempty"`
}

// Validate reports what is wrong with a handler's SLOs: each needs at least one threshold,
// finite non-negative thresholds, a target in (0, 1), valid model patterns and a name unique
// among them.
func Validate(objs []Objective) error {
	if len(objs) > MaxObjectives {
		return fmt.Errorf("%d SLOs: at most %d", len(objs), MaxObjectives)
	}
	var errs []error
	names := map[string]bool{}
	for i := range objs {
		o := &objs[i]
		name := o.name()
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("slo %q: "+format, append([]any{name}, a...)...))
		}
		for _, v := range []struct {
			what string
			x    float64
		}{{"ttft", o.TTFTMs}, {"itl", o.ITLMs}, {"latency", o.LatencyMs}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
				bad("%s must be a finite number of milliseconds ≥ 0, got %v", v.what, v.x)
			}
		}
		if o.TTFTMs == 0 && o.ITLMs == 0 && o.LatencyMs == 0 {
			bad("sets no threshold; give at least one of ttft, itl or latency")
		}
		if o.Target != 0 && !(o.Target > 0 && o.Target < 1) {
			bad("target must be a fraction in (0, 1), got %v", o.Target)
		}
		for _, sel := range []struct {
			what string
			list []string
		}{{"model", o.Models}, {"tenant", o.Tenants}} {
			if len(sel.list) > MaxModels {
				bad("%d %s selectors: at most %d", len(sel.list), sel.what, MaxModels)
			}
			for _, m := range sel.list {
				if _, err := path.Match(m, ""); err != nil || m == "" {
					bad("%s selector %q is not a name or a valid pattern", sel.what, m)
				}
			}
		}
		if len(name) > MaxName || !utf8.ValidString(name) {
			bad("the name must be valid UTF-8 of at most %d bytes (it is a metric label)", MaxName)
		}
		if names[name] {
			bad("the name is given twice; give each SLO its own name")
		}
		names[name] = true
	}
	return errors.Join(errs...)
}

// name is the SLO's name, defaulted.
func (o *Objective) name() string {
	switch {
	case o.Name != "":
		return o.Name
	case len(o.Models) > 0:
		return o.Models[0]
	}
	return "default"
}

// target is the SLO's attainment objective, defaulted.
func (o *Objective) target() float64 {
	if o.Target == 0 {
		return DefaultTarget
	}
	return o.Target
}

// compiled is an Objective ready to evaluate records against.
type compiled struct {
	name    string
	models  []string
	tenants []string
	target  float64
	slos    []stats.SLO // in the order of objs
	objs    []string    // ObjTTFT, ObjITL, ObjLatency: the ones set
	settled Thresholds
}

// Thresholds are an SLO's thresholds as the admin API reports them.
type Thresholds struct {
	TTFTMs    float64 `json:"ttft_ms,omitempty"`
	ITLMs     float64 `json:"itl_ms,omitempty"`
	LatencyMs float64 `json:"latency_ms,omitempty"`
}

func compile(o *Objective) compiled {
	c := compiled{name: o.name(), models: o.Models, tenants: o.Tenants, target: o.target(),
		settled: Thresholds{TTFTMs: o.TTFTMs, ITLMs: o.ITLMs, LatencyMs: o.LatencyMs}}
	add := func(obj, tag string, ms float64) {
		if ms > 0 {
			c.slos = append(c.slos, stats.SLO{Metric: tag, Threshold: ms})
			c.objs = append(c.objs, obj)
		}
	}
	add(ObjTTFT, stats.TagTTFT, o.TTFTMs)
	add(ObjITL, stats.TagITL, o.ITLMs)
	add(ObjLatency, stats.TagRequestLatency, o.LatencyMs)
	return c
}

// selects reports whether the SLO applies to the requests of model and tenant.
func (c *compiled) selects(model, tenant string) bool {
	return matches(c.models, model) && matches(c.tenants, tenant)
}

// matches reports whether one of the selectors (exact names or patterns) matches v; no
// selectors match everything.
func matches(selectors []string, v string) bool {
	if len(selectors) == 0 {
		return true
	}
	for _, s := range selectors {
		if s == v {
			return true
		}
		if ok, _ := path.Match(s, v); ok {
			return true
		}
	}
	return false
}
