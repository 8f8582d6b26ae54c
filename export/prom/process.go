package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/export/otel"
)

// Process holds llmtap's own series of a process (llmtap_*): what its Connect API, guard rails,
// shadow marker, recorders and OTLP log export did. The counters the process increments are
// fields; the rest are read at scrape time from ProcessSources.
type Process struct {
	// StreamsRefused counts timeline streams refused for max_streams.
	StreamsRefused prometheus.Counter
	// GuardPauses counts the guard rails' pauses by reason, GuardResumes their resumes.
	GuardPauses  *prometheus.CounterVec
	GuardResumes prometheus.Counter

	collectors []prometheus.Collector
}

// ProcessSources are what Process reads at scrape time.
type ProcessSources struct {
	// Forged, Expired and Replayed count the requests whose shadow mark was refused: not
	// signed with the key, past its expiry (or of a load the process no longer has), or
	// already used.
	Forged, Expired, Replayed func() uint64
	// RecorderDrops returns the records the recorders lost, by reason: every reason present,
	// labelled by RecorderDropReasons.
	RecorderDrops func() []uint64
	// OTLPLogs returns the OTLP log export's counts.
	OTLPLogs func() otel.LogStats
}

// RecorderDropReasons are the reason labels of llmtap_recorder_dropped_total, in the order of
// ProcessSources.RecorderDrops.
var RecorderDropReasons = []string{"queue_full", "write_failed", "recorder_closed", "drain_timeout", "queue_bytes"}

var (
	descRecorderDropped = prometheus.NewDesc("llmtap_recorder_dropped_total",
		"Measured requests not written to the recording files (traffic and measurement unaffected), by reason: queue_full (the recorder's bounded queue was full), write_failed (writing failed: disk full, I/O error), recorder_closed (the record came after its recorder closed), drain_timeout (the stream outlived its unloaded config by more than the drain time), queue_bytes (the request bodies waiting for the writer held its byte bound, so the record's trace and payload lines were left out; its records line is written).",
		[]string{"reason"}, nil)
	descLogsExported = prometheus.NewDesc("llmtap_otlp_logs_exported_total",
		"Request records the OTLP receiver accepted as log records (record otlp_logs or OTEL_LOGS_EXPORTER).", nil, nil)
	descLogsDropped = prometheus.NewDesc("llmtap_otlp_logs_dropped_total",
		"Request records not delivered as OTLP log records (traffic, measurement and the recording files unaffected), by reason: queue_full (the export's bounded queue was full: the receiver is down or slow), export_failed (the export request failed or timed out), shutdown (still queued when the export stopped).",
		[]string{"reason"}, nil)
)

// NewProcess makes the series over src.
func NewProcess(src ProcessSources) *Process {
	p := &Process{
		StreamsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llmtap_api_streams_refused_total",
			Help: "StreamTimeline streams of the Connect API refused with resource_exhausted because as many as max_streams were open on their endpoint.",
		}),
		GuardPauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_shadow_guard_pauses_total",
			Help: "Times the guard rails paused shadow load and mirroring, by reason (live_ttft_p99, live_error_rate, upstream_status).",
		}, []string{"reason"}),
		GuardResumes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llmtap_shadow_guard_resumes_total",
			Help: "Times the guard rails resumed shadow load and mirroring after a cool-down.",
		}),
	}
	count := func(f func() uint64) func() float64 { return func() float64 { return float64(f()) } }
	p.collectors = []prometheus.Collector{p.StreamsRefused, p.GuardPauses, p.GuardResumes,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llmtap_shadow_marker_forged_total",
			Help: "Requests that carried the Llmtap-Shadow header with a value not signed with the marker key; they were measured as live traffic.",
		}, count(src.Forged)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llmtap_shadow_marker_expired_total",
			Help: "Requests that carried a genuine Llmtap-Shadow mark past its expiry, or of a load this process no longer has; they were measured as live traffic.",
		}, count(src.Expired)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llmtap_shadow_marker_replayed_total",
			Help: "Requests that carried a genuine, unexpired Llmtap-Shadow mark that had already been used; they were measured as live traffic.",
		}, count(src.Replayed)),
		readCollector{[]*prometheus.Desc{descRecorderDropped}, func(ch chan<- prometheus.Metric) {
			for r, n := range src.RecorderDrops() {
				ch <- prometheus.MustNewConstMetric(descRecorderDropped, prometheus.CounterValue, float64(n), RecorderDropReasons[r])
			}
		}},
		readCollector{[]*prometheus.Desc{descLogsExported, descLogsDropped}, func(ch chan<- prometheus.Metric) {
			st := src.OTLPLogs()
			ch <- prometheus.MustNewConstMetric(descLogsExported, prometheus.CounterValue, float64(st.Exported))
			for r, n := range st.Dropped {
				ch <- prometheus.MustNewConstMetric(descLogsDropped, prometheus.CounterValue, float64(n), otel.LogDropReason(r).String())
			}
		}},
	}
	return p
}

// Collectors returns the collectors of the series.
func (p *Process) Collectors() []prometheus.Collector { return p.collectors }

// readCollector serves the series of descs that collect reads at scrape time.
type readCollector struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c readCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c readCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
