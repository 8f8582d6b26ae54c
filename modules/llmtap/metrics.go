package llmtap

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/export/prom"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/promexport"
)

// The collectors (telemetry/promexport) are created once per process and registered again in
// the registry of every config load (Caddy makes a new registry per load), so counts survive
// reloads.
var (
	// modelLabels bounds model names, in length and number, with the one rule of
	// telemetry/labelcap; /metrics, the OTel export, the summary and the timeline share it, so
	// they give the same models their own series and fold the same ones into "_other".
	modelLabels = labelcap.New(labelcap.DefaultMax)

	// requestMetrics is the engine's Prometheus sink (engine.go).
	requestMetrics = promexport.NewRequests(promexport.RequestSources{
		Models:   modelLabels,
		InFlight: func() float64 { return float64(activeTapInFlight()) },
		Dropped:  func() float64 { return float64(RecordsDropped()) },
		DroppedBytes: func() float64 {
			if t := activeTap(); t != nil {
				return float64(t.DroppedBytes())
			}
			return 0
		},
		Histogram: histogramOpts, // metrics_native.go
	})

	// tenantLabels bounds tenants, in length and number, with the rule of telemetry/labelcap;
	// /metrics, the OTel export and the summary share it, so they agree on which tenants have
	// series of their own. A tenant once given its series keeps it for the process's life.
	tenantLabels = labelcap.New(labelcap.DefaultMax)

	// usageMetrics are the usage counters by tenant, the engine's second Prometheus sink.
	usageMetrics = promexport.NewUsage(modelLabels, tenantLabels)

	// collectors are the rest: GPU readings, mirror and shadow counters read at scrape time.
	collectors = []prometheus.Collector{
		promexport.NewGPU(func() []gpu.Sample { return latestGPUSamples(nil) }),
		prom.Mirror(func() prom.MirrorReading {
			return prom.MirrorReading{Counters: proc.mirror.stats.Snapshot(), Gate: proc.mirror.gate.State(), Pairs: proc.mirror.pairs.Summary().Pairs}
		}),
		prom.Shadow(func() []inproc.Status {
			rs := shadowRunners()
			out := make([]inproc.Status, len(rs))
			for i, r := range rs {
				out[i] = r.Status()
			}
			return out
		}),
		promexport.SLO{Tracker: sloTracker}, // slo.go
		promexport.PassiveHeadroom(passiveHeadroom.Estimates),
		recorderCollector{}, logsCollector{}, promexport.RecorderSessions{}, promexport.RecorderPayloadsSkipped{}, metricStreamsRefused, metricGuardPauses, metricGuardResumes, metricForged, metricMarkExpired, metricMarkReplayed,
	}
)

// activeTapInFlight is the number of requests the running engine measures (0 when none runs).
func activeTapInFlight() int64 {
	if t := activeTap(); t != nil {
		return t.InFlight()
	}
	return 0
}

// registerCollectors registers every llmtap collector in reg (Caddy makes a new registry per
// config load), tolerating ones already there. Both the llmtap app and the handler call it, so
// a config with either one alone serves all of llmtap's metrics, the GPU readings included.
func registerCollectors(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range append(append(requestMetrics.Collectors(), usageMetrics.Collectors()...), collectors...) {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}
