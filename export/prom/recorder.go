package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/recorder"
)

var descRecorderSessions = prometheus.NewDesc("llmtap_recorder_sessions_total",
	"Sessions whose think time a recorder could not keep, by outcome: untracked (the session started while the recorder remembered max_sessions sessions: its next turn was written without a delay), expired (forgotten after session_idle without a turn).",
	[]string{"outcome"}, nil)

// RecorderSessions serves llmtap_recorder_sessions_total from the process's recorders
// (recorder.ProcessSessions), both outcomes always present.
func RecorderSessions() prometheus.Collector {
	return readCollector{[]*prometheus.Desc{descRecorderSessions}, func(ch chan<- prometheus.Metric) {
		untracked, expired := recorder.ProcessSessions()
		ch <- prometheus.MustNewConstMetric(descRecorderSessions, prometheus.CounterValue, float64(untracked), "untracked")
		ch <- prometheus.MustNewConstMetric(descRecorderSessions, prometheus.CounterValue, float64(expired), "expired")
	}}
}

var descPayloadsSkipped = prometheus.NewDesc("llmtap_recorder_payloads_skipped_total",
	"Request bodies the recorders left out of their payload files, by reason: too_large (over max_payload), not_object (not one complete JSON object: empty, an array or another value, invalid JSON, or cut when captured).",
	[]string{"reason"}, nil)

// RecorderPayloadsSkipped serves llmtap_recorder_payloads_skipped_total from the process's
// recorders (recorder.ProcessPayloadsSkipped), both reasons always present.
func RecorderPayloadsSkipped() prometheus.Collector {
	return readCollector{[]*prometheus.Desc{descPayloadsSkipped}, func(ch chan<- prometheus.Metric) {
		tooLarge, notObject := recorder.ProcessPayloadsSkipped()
		ch <- prometheus.MustNewConstMetric(descPayloadsSkipped, prometheus.CounterValue, float64(tooLarge), recorder.SkipTooLarge)
		ch <- prometheus.MustNewConstMetric(descPayloadsSkipped, prometheus.CounterValue, float64(notObject), recorder.SkipNotObject)
	}}
}
