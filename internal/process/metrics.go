package process

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/export/prom"
	"github.com/llmtap/llmtap/load/shadow"
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

// metrics are the process's own series (prom.Process), beside the collectors over its parts.
type metrics struct {
	*prom.Process
	collectors []prometheus.Collector
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
	m.Process = prom.NewProcess(prom.ProcessSources{
		Forged: p.marks.forged.Load, Expired: p.marks.expired.Load, Replayed: p.marks.replayed.Load,
		RecorderDrops: func() []uint64 { n := p.RecorderDrops(); return n[:] },
		OTLPLogs:      p.OTLPLogStats,
	})
	m.collectors = append(append(p.requests.Collectors(), p.usage.Collectors()...),
		prom.NewGPU(func() []gpu.Sample { return p.Hub.LatestGPU(nil) }),
		prom.Mirror(func() prom.MirrorReading {
			return prom.MirrorReading{Counters: p.Mirroring.Stats.Snapshot(), Gate: p.Mirroring.Gate.State(), Pairs: p.Mirroring.Pairs.Summary().Pairs}
		}),
		prom.Shadow(func() []shadow.Status {
			rs := p.ShadowRunners()
			out := make([]shadow.Status, len(rs))
			for i, r := range rs {
				out[i] = r.Status()
			}
			return out
		}),
		prom.SLO{Tracker: p.SLOTracker},
		prom.PassiveHeadroom(p.Passive.Estimates),
		prom.RecorderSessions(), prom.RecorderPayloadsSkipped(),
	)
	m.collectors = append(m.collectors, m.Process.Collectors()...)
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
