package process

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/export/prom"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

const (
	// nativeBucketFactor bounds the growth from one native bucket to the next: 1.1 gives
	// schema 3, eight buckets per power of two, each at most 9.05 % wider than the last.
	nativeBucketFactor = 1.1
	// nativeMaxBuckets bounds the buckets of one series (the OTel SDK's default for base-2
	// exponential histograms is 160 too); past it the resolution halves, and counts are kept.
	nativeMaxBuckets = 160
)

// NativeHistograms reads the value of LLMTAP_PROMETHEUS_NATIVE_HISTOGRAMS: "on" turns native
// histograms on (Options.NativeHistograms), "off" or "" leaves them off; ok is false for any
// other value, which leaves them off too.
func NativeHistograms(value string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "on":
		return true, true
	case "", "off":
		return false, true
	}
	return false, false
}

// metrics are the process's own counters, beside the collectors over its parts.
type metrics struct {
	streamsRefused            prometheus.Counter
	guardPauses               *prometheus.CounterVec
	guardResumes              prometheus.Counter
	forged, expired, replayed prometheus.CounterFunc
	collectors                []prometheus.Collector
}

// newMetrics makes the process's Prometheus collectors: the engine's sinks and those read at
// scrape time. They live as long as the Process and are registered again in the registry of
// every config load (Caddy makes a new registry per load), so counts survive reloads.
func (p *Process) newMetrics() {
	histogram := func(o prometheus.HistogramOpts) prometheus.HistogramOpts {
		if p.opts.NativeHistograms {
			o.NativeHistogramBucketFactor = nativeBucketFactor
			o.NativeHistogramMaxBucketNumber = nativeMaxBuckets
		}
		return o
	}
	p.requests = prom.NewRequests(prom.RequestSources{
		Models:       p.Models,
		InFlight:     func() float64 { return float64(p.tap.InFlight()) },
		Dropped:      func() float64 { return float64(p.tap.Dropped()) },
		DroppedBytes: func() float64 { return float64(p.tap.DroppedBytes()) },
		Histogram:    histogram,
	})
	p.usage = prom.NewUsage(p.Models, p.Tenants)
	m := &p.metrics
	m.streamsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmtap_api_streams_refused_total",
		Help: "StreamTimeline streams of the Connect API refused with resource_exhausted because as many as max_streams were open on their endpoint.",
	})
	m.guardPauses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_shadow_guard_pauses_total",
		Help: "Times the guard rails paused shadow load and mirroring, by reason (live_ttft_p99, live_error_rate, upstream_status).",
	}, []string{"reason"})
	m.guardResumes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmtap_shadow_guard_resumes_total",
		Help: "Times the guard rails resumed shadow load and mirroring after a cool-down.",
	})
	// Refused marks, by reason: forged (not signed with the key), expired (past their few
	// seconds, or minted by a load this process no longer has) and replayed (genuine,
	// unexpired, already used once).
	m.forged = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_forged_total",
		Help: "Requests that carried the Llmtap-Shadow header with a value not signed with the marker key; they were measured as live traffic.",
	}, func() float64 { return float64(p.marks.forged.Load()) })
	m.expired = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_expired_total",
		Help: "Requests that carried a genuine Llmtap-Shadow mark past its expiry, or of a load this process no longer has; they were measured as live traffic.",
	}, func() float64 { return float64(p.marks.expired.Load()) })
	m.replayed = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_replayed_total",
		Help: "Requests that carried a genuine, unexpired Llmtap-Shadow mark that had already been used; they were measured as live traffic.",
	}, func() float64 { return float64(p.marks.replayed.Load()) })
	m.collectors = append(append(p.requests.Collectors(), p.usage.Collectors()...),
		prom.NewGPU(func() []gpu.Sample { return p.Hub.LatestGPU(nil) }),
		prom.Mirror(func() prom.MirrorReading {
			return prom.MirrorReading{Counters: p.Mirroring.Stats.Snapshot(), Gate: p.Mirroring.Gate.State(), Pairs: p.Mirroring.Pairs.Summary().Pairs}
		}),
		prom.Shadow(func() []inproc.Status {
			rs := p.ShadowRunners()
			out := make([]inproc.Status, len(rs))
			for i, r := range rs {
				out[i] = r.Status()
			}
			return out
		}),
		prom.SLO{Tracker: p.SLOTracker},
		prom.PassiveHeadroom(p.Passive.Estimates),
		recorderCollector{p}, logsCollector{p}, prom.RecorderSessions{}, prom.RecorderPayloadsSkipped{},
		m.streamsRefused, m.guardPauses, m.guardResumes, m.forged, m.expired, m.replayed,
	)
}

// Register registers every collector of the process in reg (a host may make a new registry
// per config, as Caddy does), tolerating ones already there. Nil reg: nothing.
func (p *Process) Register(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range p.metrics.collectors {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// DeleteModelSeries removes the Prometheus series of the given model labels.
func (p *Process) DeleteModelSeries(models ...string) {
	for _, m := range models {
		p.requests.DeleteModel(m)
		p.usage.DeleteModel(m)
	}
}
