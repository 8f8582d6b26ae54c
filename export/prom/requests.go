package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// labels are the labels of the per-request series.
var labels = []string{"model", "class", "status_class"}

// Requests are the series fed from finalized request records: the OpenTelemetry GenAI
// histograms (bucket boundaries as the conventions recommend, the same the OTel export uses),
// request and error counters, and the counters of what hostile or unusual responses made the
// handler do (labelled by fixed sets of values, never by anything a client or upstream
// chooses). Consume is safe for concurrent use.
type Requests struct {
	models                                  *labelcap.Set
	ttft, tpot, duration, opDuration, token *prometheus.HistogramVec
	requests, errors                        *prometheus.CounterVec
	decodeStopped, usageInjection, upgraded *prometheus.CounterVec
	all                                     []prometheus.Collector
}

// RequestSources are what the request series read besides the records.
type RequestSources struct {
	// Models bounds model names, in length and number; the host shares it with its other
	// surfaces so they fold the same models into "_other".
	Models *labelcap.Set
	// InFlight and Dropped return the requests being measured and the records the pipeline
	// dropped, read at scrape time (nil: 0). DroppedBytes is the part of Dropped that found
	// the queue full in bytes (reason queue_bytes; the rest is reason queue_full).
	InFlight, Dropped, DroppedBytes func() float64
	// Histogram, when set, adjusts the options of each gen_ai_* histogram before it is
	// created (the host adds native histograms to them this way).
	Histogram func(prometheus.HistogramOpts) prometheus.HistogramOpts
}

// NewRequests creates the request series.
func NewRequests(src RequestSources) *Requests {
	orZero := func(f func() float64) func() float64 {
		if f == nil {
			return func() float64 { return 0 }
		}
		return f
	}
	opts := src.Histogram
	if opts == nil {
		opts = func(o prometheus.HistogramOpts) prometheus.HistogramOpts { return o }
	}
	m := &Requests{
		models: src.Models,
		ttft: prometheus.NewHistogramVec(opts(prometheus.HistogramOpts{
			Name:    "gen_ai_server_time_to_first_token_seconds",
			Help:    "Time from the request reaching llmtap to the first content event of the response (successful streams).",
			Buckets: otel.TTFTBuckets,
		}), labels),
		tpot: prometheus.NewHistogramVec(opts(prometheus.HistogramOpts{
			Name:    "gen_ai_server_time_per_output_token_seconds",
			Help:    "Inter-token latency: (request latency - time to first token) / (output tokens - 1), for successful streams of two tokens or more.",
			Buckets: otel.TPOTBuckets,
		}), labels),
		duration: prometheus.NewHistogramVec(opts(prometheus.HistogramOpts{
			Name:    "gen_ai_server_request_duration_seconds",
			Help:    "Time from the request reaching llmtap to its last content event (streams) or the end of its body (non-streaming).",
			Buckets: otel.DurationBuckets,
		}), labels),
		opDuration: prometheus.NewHistogramVec(opts(prometheus.HistogramOpts{
			Name:    "gen_ai_client_operation_duration_seconds",
			Help:    "Time from the request reaching llmtap until its response was complete (every request, failed ones included).",
			Buckets: otel.DurationBuckets,
		}), labels),
		token: prometheus.NewHistogramVec(opts(prometheus.HistogramOpts{
			Name:    "gen_ai_client_token_usage",
			Help:    "Tokens per request by type (input, output); the count comes from the server's usage when sent, else from llmtap's tokenizer.",
			Buckets: otel.TokenBuckets,
		}), append([]string{"gen_ai_token_type"}, labels...)),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_requests_total",
			Help: "Requests measured, by model, traffic class and response status class.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_request_errors_total",
			Help: "Requests that failed, by traffic class and error class (http_status, stream_error, truncated, client_canceled, upstream_failure, malformed).",
		}, []string{"class", "error"}),
		decodeStopped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_decode_stopped_total",
			Help: "Encoded (gzip, br) responses whose decoding for measuring stopped at a bound, by reason: ratio (a decompression bomb) or size; the rest passed unmeasured.",
		}, []string{"reason"}),
		usageInjection: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_usage_injection_total",
			Help: "Requests inject_usage acted on, by outcome: injected, injected_identity, skipped_compressed, unfiltered_encoded.",
		}, []string{"outcome"}),
		upgraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_upgraded_total",
			Help: "Connections upgraded after 101 Switching Protocols (WebSocket), recorded with status 101, by traffic class.",
		}, []string{"class"}),
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "llmtap_streams_in_flight",
		Help: "Requests being measured right now.",
	}, orZero(src.InFlight))
	all, bytes := orZero(src.Dropped), orZero(src.DroppedBytes)
	// llmtap_records_dropped_total, both reasons always present.
	dropped := readCollector{[]*prometheus.Desc{descRecordsDropped}, func(ch chan<- prometheus.Metric) {
		all, bytes := all(), bytes()
		ch <- prometheus.MustNewConstMetric(descRecordsDropped, prometheus.CounterValue, max(all-bytes, 0), "queue_full")
		ch <- prometheus.MustNewConstMetric(descRecordsDropped, prometheus.CounterValue, bytes, "queue_bytes")
	}}
	m.all = []prometheus.Collector{m.ttft, m.tpot, m.duration, m.opDuration, m.token, m.requests, m.errors,
		inFlight, dropped, m.decodeStopped, m.usageInjection, m.upgraded}
	return m
}

// Collectors returns every series, to register.
func (m *Requests) Collectors() []prometheus.Collector { return m.all }

// DeleteModel removes the series of the model label model.
func (m *Requests) DeleteModel(model string) {
	match := prometheus.Labels{"model": model}
	for _, v := range []*prometheus.HistogramVec{m.ttft, m.tpot, m.duration, m.opDuration, m.token} {
		v.DeletePartialMatch(match)
	}
	m.requests.DeletePartialMatch(match)
}

// Consume observes a finalized record.
func (m *Requests) Consume(r *record.Record) {
	model, _ := m.models.Label(r.Model)
	if model == "" {
		model = record.UnknownModel
	}
	sc := r.StatusClass()
	m.requests.WithLabelValues(model, r.Class, sc).Inc()
	m.opDuration.WithLabelValues(model, r.Class, sc).Observe(r.DurationMs / 1000)
	m.countUnusual(r)
	if !r.OK() {
		m.errors.WithLabelValues(r.Class, r.Error).Inc()
		return
	}
	if r.TTFTMs != nil {
		m.ttft.WithLabelValues(model, r.Class, sc).Observe(*r.TTFTMs / 1000)
	}
	if r.ITLMs != nil {
		m.tpot.WithLabelValues(model, r.Class, sc).Observe(*r.ITLMs / 1000)
	}
	if r.RequestLatencyMs != nil {
		m.duration.WithLabelValues(model, r.Class, sc).Observe(*r.RequestLatencyMs / 1000)
	}
	if r.InputTokensSource != "" {
		m.token.WithLabelValues("input", model, r.Class, sc).Observe(float64(r.InputTokens))
	}
	if r.OutputTokensSource != "" {
		m.token.WithLabelValues("output", model, r.Class, sc).Observe(float64(r.OutputTokens))
	}
}

// countUnusual counts a record's decode stop, usage injection and upgrade, if any.
func (m *Requests) countUnusual(r *record.Record) {
	if r.DecodeStopped != "" {
		m.decodeStopped.WithLabelValues(r.DecodeStopped).Inc()
	}
	if r.UsageInjection != "" {
		m.usageInjection.WithLabelValues(r.UsageInjection).Inc()
	}
	if r.Status == 101 {
		m.upgraded.WithLabelValues(r.Class).Inc()
	}
}

var descRecordsDropped = prometheus.NewDesc("llmtap_records_dropped_total",
	"Request records dropped because the record pipeline's queue was full (measurement lost, traffic unaffected), by reason: queue_full (its bounded number of records), queue_bytes (the bytes its records hold: request bodies, response texts to count).",
	[]string{"reason"}, nil)
