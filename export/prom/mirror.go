package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/mirror"
)

// MirrorReading is what the mirror collector reads at scrape time.
type MirrorReading struct {
	// Counters are what happened to sampled requests.
	Counters mirror.Counters
	// Gate is the guard rails' pause switch.
	Gate mirror.GateState
	// Pairs counts live requests paired with the record of their mirror copy.
	Pairs uint64
}

// Mirror exposes the mirror's counters, read at scrape time from the function.
type Mirror func() MirrorReading

var (
	descMirrorSampled   = prometheus.NewDesc("llmtap_mirror_sampled_total", "Live requests the sample chose for mirroring.", nil, nil)
	descMirrorSent      = prometheus.NewDesc("llmtap_mirror_sent_total", "Mirror requests started.", nil, nil)
	descMirrorCompleted = prometheus.NewDesc("llmtap_mirror_completed_total", "Mirror requests whose response was read to its end with a status below 400.", nil, nil)
	descMirrorFailed    = prometheus.NewDesc("llmtap_mirror_failed_total", "Mirror requests that got no response, an HTTP status of 400 or more, or a response that broke off.", nil, nil)
	descMirrorCut       = prometheus.NewDesc("llmtap_mirror_cut_total", "Mirror requests cut by llmtap itself (a config reload or shutdown stopped the mirror) before their response completed; not failures, and never paired for the canary verdict.", nil, nil)
	descMirrorSkipped   = prometheus.NewDesc("llmtap_mirror_skipped_total", "Sampled requests not mirrored, by reason (over_cap, body_too_large, body_incomplete, paused, loop, stopped).", []string{"reason"}, nil)
	descMirrorInFlight  = prometheus.NewDesc("llmtap_mirror_in_flight", "Mirror requests running now.", nil, nil)
	descMirrorPaused    = prometheus.NewDesc("llmtap_mirror_paused", "1 while the guard rails hold mirroring paused, else 0.", nil, nil)
	descMirrorPauses    = prometheus.NewDesc("llmtap_mirror_pauses_total", "Times the guard rails paused mirroring.", nil, nil)
	descMirrorPairs     = prometheus.NewDesc("llmtap_mirror_pairs_total", "Live requests paired with the record of their mirror copy.", nil, nil)
)

// Describe sends the descriptors of the mirror's series.
func (Mirror) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMirrorSampled, descMirrorSent, descMirrorCompleted, descMirrorFailed, descMirrorCut,
		descMirrorSkipped, descMirrorInFlight, descMirrorPaused, descMirrorPauses, descMirrorPairs} {
		ch <- d
	}
}

// Collect reads the mirror and sends its series.
func (read Mirror) Collect(ch chan<- prometheus.Metric) {
	m := read()
	c := m.Counters
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descMirrorSampled, c.Sampled)
	counter(descMirrorSent, c.Sent)
	counter(descMirrorCompleted, c.Completed)
	counter(descMirrorFailed, c.Failed)
	counter(descMirrorCut, c.Cut)
	for _, reason := range mirror.SkipReasons {
		counter(descMirrorSkipped, c.Skipped[reason], reason)
	}
	ch <- prometheus.MustNewConstMetric(descMirrorInFlight, prometheus.GaugeValue, float64(c.InFlight))
	ch <- prometheus.MustNewConstMetric(descMirrorPaused, prometheus.GaugeValue, boolValue(m.Gate.Paused))
	counter(descMirrorPauses, m.Gate.Pauses)
	counter(descMirrorPairs, m.Pairs)
}

// boolValue is 1 for true, 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = Mirror(nil)
