package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/load/shadow"
)

// Shadow reports every shadow load's counters, read at scrape time from the function (the
// status of every load).
type Shadow func() []shadow.Status

var (
	descShadowSent     = prometheus.NewDesc("llmtap_shadow_requests_total", "Shadow requests sent by a shadow load, by result (ok, error).", []string{"shadow", "result"}, nil)
	descShadowDropped  = prometheus.NewDesc("llmtap_shadow_dropped_total", "Shadow arrivals not sent because max_in_flight requests were in flight.", []string{"shadow"}, nil)
	descShadowInFlight = prometheus.NewDesc("llmtap_shadow_in_flight", "Shadow requests in flight.", []string{"shadow"}, nil)
	descShadowRate     = prometheus.NewDesc("llmtap_shadow_rate", "The rate a shadow load asks for now (requests per second; 0 while paused, waiting or stopped).", []string{"shadow"}, nil)
	descShadowPaused   = prometheus.NewDesc("llmtap_shadow_paused", "1 while the guard rails hold the shadow load paused.", []string{"shadow"}, nil)
)

// Describe sends the descriptors of the shadow loads' series.
func (Shadow) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShadowSent, descShadowDropped, descShadowInFlight, descShadowRate, descShadowPaused} {
		ch <- d
	}
}

// Collect reads every load and sends its series.
func (loads Shadow) Collect(ch chan<- prometheus.Metric) {
	for _, st := range loads() {
		ch <- prometheus.MustNewConstMetric(descShadowSent, prometheus.CounterValue, float64(st.OK), st.Name, "ok")
		ch <- prometheus.MustNewConstMetric(descShadowSent, prometheus.CounterValue, float64(st.Errors), st.Name, "error")
		ch <- prometheus.MustNewConstMetric(descShadowDropped, prometheus.CounterValue, float64(st.Dropped), st.Name)
		ch <- prometheus.MustNewConstMetric(descShadowInFlight, prometheus.GaugeValue, float64(st.InFlight), st.Name)
		ch <- prometheus.MustNewConstMetric(descShadowRate, prometheus.GaugeValue, st.Rate, st.Name)
		ch <- prometheus.MustNewConstMetric(descShadowPaused, prometheus.GaugeValue, boolValue(st.State == shadow.StatePaused), st.Name)
	}
}

var _ prometheus.Collector = Shadow(nil)
