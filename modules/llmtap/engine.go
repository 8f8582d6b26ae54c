package llmtap

import (
	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// The measurement engine is one per process and outlives config reloads: it is held in
// proc.pool (lifetimes.go) by the llmtap app and every llmtap handler, and a handler of an
// unloaded config holds it until its last stream has ended (bounded by drainTimeout), so no
// count or in-flight stream is lost, even when a reload removes llmtap and a later one adds it
// back. It stops when the last holder lets go.
type engine struct {
	tap  *tap.Tap
	otel *otelExport // nil unless the OTEL_* environment turns export on (otel.go)
}

// acquireEngine holds the engine, starting it when none runs; every call is paired with one
// releaseEngine.
func acquireEngine() (*engine, error) {
	e, _, err := hold(keyEngine, func() (*engine, error) {
		e := &engine{tap: tap.New(tap.Options{Stats: stats.Options{Models: modelLabels, Tenants: tenantLabels}})} // one folding rule (metrics.go)
		e.tap.AddSink(requestMetrics)
		e.tap.AddSink(usageMetrics)
		e.tap.AddSink(recordSink{})
		e.tap.AddSink(logSink{})           // before startOTel's span sink: a log record takes the request's span ids (otellogs.go)
		e.tap.AddEnricher(proc.hub.Enrich) // GPU figures per record (timeline.Hub)
		e.tap.AddSink(proc.hub)            // the timeline's request metrics (timeline.Hub)
		e.tap.AddSink(proc.mirror.pairs)
		e.tap.AddSink(shadowSink{}) // guard rails and headroom probes (shadow.go)
		e.tap.AddSink(sloTracker)   // SLO attainment (slo.go)
		e.otel = startOTel(e.tap)
		proc.engine.Store(e)
		logger("engine").Debug("llmtap measurement engine started")
		return e, nil
	})
	return e, err
}

func releaseEngine() { _ = letGo(keyEngine) }

// Destruct drains the record pipeline into the sinks and stops the exporters.
func (e *engine) Destruct() error {
	proc.engine.CompareAndSwap(e, nil)
	_ = e.tap.Close()
	e.otel.shutdown()
	return nil
}

// logger is the logger of process-wide work that belongs to no config (the engine, drains):
// Caddy's default logger at the time of the call, whose writers are open.
func logger(name string) *zap.Logger { return caddy.Log().Named("llmtap." + name) }

// ActiveTap returns the running measurement engine, or nil when no loaded config uses the
// llmtap handler. Commands running Caddy in-process (the demo) use it to add record sinks and
// to wait for pending records.
func ActiveTap() *tap.Tap { return activeTap() }

// inFlight is the engine's count of requests in flight, 0 when none runs.
func inFlight() int64 {
	if t := activeTap(); t != nil {
		return t.InFlight()
	}
	return 0
}

func activeTap() *tap.Tap {
	if e := proc.engine.Load(); e != nil {
		return e.tap
	}
	return nil
}
