package llmtap

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// The measurement engine is one per process and outlives config reloads: Caddy provisions the
// new config before it cleans up the old one, so the reference count never drops to zero during
// a reload and no count or in-flight stream is lost. It stops when the last config using it is
// cleaned up.
var (
	engineMu   sync.Mutex
	engineRefs int
	current    atomic.Pointer[engine]
)

type engine struct {
	tap  *tap.Tap
	otel *otelExport // nil unless the OTEL_* environment turns export on (otel.go)
}

func acquireEngine(logger *zap.Logger) (*engine, error) {
	engineMu.Lock()
	defer engineMu.Unlock()
	engineRefs++
	if e := current.Load(); e != nil {
		return e, nil
	}
	e := &engine{tap: tap.New(tap.Options{Stats: stats.Options{Models: modelLabels}})} // one folding rule (metrics.go)
	e.tap.AddSink(metricsSink{})
	e.tap.AddSink(recordSink{})
	e.tap.AddEnricher(enrichGPU)  // GPU figures per record (timeline.go)
	e.tap.AddSink(timelineSink{}) // the timeline's request metrics (timeline.go)
	e.tap.AddSink(mirrorPairs)
	e.tap.AddSink(shadowSink{}) // guard rails and headroom probes (shadow.go)
	e.otel = startOTel(e.tap, logger)
	current.Store(e)
	logger.Debug("llmtap measurement engine started")
	return e, nil
}

func releaseEngine() {
	engineMu.Lock()
	defer engineMu.Unlock()
	engineRefs--
	if engineRefs > 0 {
		return
	}
	if e := current.Swap(nil); e != nil {
		_ = e.tap.Close()
		e.otel.shutdown()
	}
}

// ActiveTap returns the running measurement engine, or nil when no loaded config uses the
// llmtap handler. Commands running Caddy in-process (the demo) use it to add record sinks and
// to wait for pending records.
func ActiveTap() *tap.Tap { return activeTap() }

func activeTap() *tap.Tap {
	if e := current.Load(); e != nil {
		return e.tap
	}
	return nil
}
