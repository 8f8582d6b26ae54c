package promexport

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/recorder"
)

var descRecorderSessions = prometheus.NewDesc("llmtap_recorder_sessions_total",
	"Sessions whose think time a recorder could not keep, by outcome: untracked (the session started while the recorder remembered max_sessions sessions: its next turn was written without a delay), expired (forgotten after session_idle without a turn).",
	[]string{"outcome"}, nil)

// RecorderSessions serves llmtap_recorder_sessions_total from the process's recorders
// (recorder.ProcessSessions), both outcomes always present.
type RecorderSessions struct{}

func (RecorderSessions) Describe(ch chan<- *prometheus.Desc) { ch <- descRecorderSessions }

func (RecorderSessions) Collect(ch chan<- prometheus.Metric) {
	untracked, expired := recorder.ProcessSessions()
	ch <- prometheus.MustNewConstMetric(descRecorderSessions, prometheus.CounterValue, float64(untracked), "untracked")
	ch <- prometheus.MustNewConstMetric(descRecorderSessions, prometheus.CounterValue, float64(expired), "expired")
}

var _ prometheus.Collector = RecorderSessions{}
