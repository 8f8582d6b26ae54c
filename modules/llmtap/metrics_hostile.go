package llmtap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Counters of what hostile or unusual responses made the handler do; labelled by fixed sets
// of values, never by anything a client or upstream chooses.
var (
	metricDecodeStopped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_decode_stopped_total",
		Help: "Encoded (gzip, br) responses whose decoding for measuring stopped at a bound, by reason: ratio (a decompression bomb) or size; the rest passed unmeasured.",
	}, []string{"reason"})
	metricUsageInjection = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_usage_injection_total",
		Help: "Requests inject_usage acted on, by outcome: injected, injected_identity, skipped_compressed, unfiltered_encoded.",
	}, []string{"outcome"})
	metricUpgraded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_upgraded_total",
		Help: "Connections upgraded after 101 Switching Protocols (WebSocket), recorded with status 101, by traffic class.",
	}, []string{"class"})
)

func init() {
	collectors = append(collectors, metricDecodeStopped, metricUsageInjection, metricUpgraded)
}

// countUnusual counts a record's decode stop, usage injection and upgrade, if any.
func countUnusual(r *record.Record) {
	if r.DecodeStopped != "" {
		metricDecodeStopped.WithLabelValues(r.DecodeStopped).Inc()
	}
	if r.UsageInjection != "" {
		metricUsageInjection.WithLabelValues(r.UsageInjection).Inc()
	}
	if r.Status == 101 {
		metricUpgraded.WithLabelValues(r.Class).Inc()
	}
}
