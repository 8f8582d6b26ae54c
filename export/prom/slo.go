package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/slo"
)

// SLO exposes the SLO tracker's counters (docs/slo.md), read at scrape time.
type SLO struct{ Tracker *slo.Tracker }

var (
	descSLORequests = prometheus.NewDesc("llmtap_slo_requests_total",
		"Live requests counted against an SLO objective (ttft, itl, latency, or all of the SLO's thresholds), by result (met or missed).",
		[]string{"slo", "model", "objective", "result"}, nil)
	descSLOTarget = prometheus.NewDesc("llmtap_slo_target",
		"The attainment objective of an SLO: the share of requests that should meet all its thresholds.",
		[]string{"slo", "model"}, nil)
	descSLODropped = prometheus.NewDesc("llmtap_slo_dropped_total",
		"Live requests not counted against their SLO because the tracker held its maximum of (SLO, model) series.", nil, nil)
)

// Describe sends the descriptors of the SLO series.
func (SLO) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSLORequests
	ch <- descSLOTarget
	ch <- descSLODropped
}

// Collect reads the tracker and sends its series: two counters (met, missed) per (SLO, model,
// objective), a target gauge per (SLO, model).
func (s SLO) Collect(ch chan<- prometheus.Metric) {
	cs, ts := s.Tracker.Counters()
	for _, c := range cs {
		ch <- prometheus.MustNewConstMetric(descSLORequests, prometheus.CounterValue, float64(c.Met), c.SLO, c.Model, c.Objective, "met")
		ch <- prometheus.MustNewConstMetric(descSLORequests, prometheus.CounterValue, float64(c.Missed), c.SLO, c.Model, c.Objective, "missed")
	}
	for _, t := range ts {
		ch <- prometheus.MustNewConstMetric(descSLOTarget, prometheus.GaugeValue, t.Target, t.SLO, t.Model)
	}
	ch <- prometheus.MustNewConstMetric(descSLODropped, prometheus.CounterValue, float64(s.Tracker.Dropped()))
}

var _ prometheus.Collector = SLO{}
