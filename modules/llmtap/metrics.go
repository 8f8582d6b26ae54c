package llmtap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/otelexport"
	"github.com/llmtap/llmtap/telemetry/record"
)

// The collectors are created once per process and registered again in the registry of every
// config load (Caddy makes a new registry per load), so counts survive reloads.
var (
	labels = []string{"model", "class", "status_class"}

	// Bucket boundaries recommended by the OpenTelemetry GenAI semantic conventions, the same
	// the OTel export uses.
	ttftBuckets     = otelexport.TTFTBuckets
	tpotBuckets     = otelexport.TPOTBuckets
	durationBuckets = otelexport.DurationBuckets
	tokenBuckets    = otelexport.TokenBuckets

	metricTTFT = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_to_first_token_seconds",
		Help:    "Time from the request reaching llmtap to the first content event of the response (successful streams).",
		Buckets: ttftBuckets,
	}, labels)
	metricTPOT = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_per_output_token_seconds",
		Help:    "Inter-token latency: (request latency - time to first token) / (output tokens - 1), for successful streams of two tokens or more.",
		Buckets: tpotBuckets,
	}, labels)
	metricDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_request_duration_seconds",
		Help:    "Time from the request reaching llmtap to its last content event (streams) or the end of its body (non-streaming).",
		Buckets: durationBuckets,
	}, labels)
	metricOpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_operation_duration_seconds",
		Help:    "Time from the request reaching llmtap until its response was complete (every request, failed ones included).",
		Buckets: durationBuckets,
	}, labels)
	metricTokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_token_usage",
		Help:    "Tokens per request by type (input, output); the count comes from the server's usage when sent, else from llmtap's tokenizer.",
		Buckets: tokenBuckets,
	}, append([]string{"gen_ai_token_type"}, labels...))
	metricRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_requests_total",
		Help: "Requests measured, by model, traffic class and response status class.",
	}, labels)
	metricErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_request_errors_total",
		Help: "Requests that failed, by traffic class and error class (http_status, stream_error, truncated, client_canceled, upstream_failure, malformed).",
	}, []string{"class", "error"})
	metricInFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "llmtap_streams_in_flight",
		Help: "Requests being measured right now.",
	}, func() float64 {
		if t := activeTap(); t != nil {
			return float64(t.InFlight())
		}
		return 0
	})
	metricDropped = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_records_dropped_total",
		Help: "Request records dropped because the record pipeline's queue was full (measurement lost, traffic unaffected).",
	}, func() float64 {
		if t := activeTap(); t != nil {
			return float64(t.Dropped())
		}
		return 0
	})

	collectors = []prometheus.Collector{metricTTFT, metricTPOT, metricDuration, metricOpDuration, metricTokens,
		metricRequests, metricErrors, metricInFlight, metricDropped, mirrorCollector{},
		newGPUCollector()} // hw_* from the GPU sampler (gpu_prometheus.go)

	// modelLabels bounds model names, in length and number, with the one rule of
	// telemetry/labelcap; /metrics, the OTel export, the summary and the timeline share it, so
	// they give the same models their own series and fold the same ones into "_other".
	modelLabels = labelcap.New(labelcap.DefaultMax)
)

// metricsSink observes finalized records into the Prometheus collectors.
type metricsSink struct{}

func (metricsSink) Consume(r *record.Record) {
	model, _ := modelLabels.Label(r.Model)
	if model == "" {
		model = record.UnknownModel
	}
	sc := r.StatusClass()
	metricRequests.WithLabelValues(model, r.Class, sc).Inc()
	countUsage(r, model, sc) // metrics_usage.go: per tenant, tokens by kind, GPU time, cost
	metricOpDuration.WithLabelValues(model, r.Class, sc).Observe(r.DurationMs / 1000)
	countUnusual(r)
	if !r.OK() {
		metricErrors.WithLabelValues(r.Class, r.Error).Inc()
		return
	}
	if r.TTFTMs != nil {
		metricTTFT.WithLabelValues(model, r.Class, sc).Observe(*r.TTFTMs / 1000)
	}
	if r.ITLMs != nil {
		metricTPOT.WithLabelValues(model, r.Class, sc).Observe(*r.ITLMs / 1000)
	}
	if r.RequestLatencyMs != nil {
		metricDuration.WithLabelValues(model, r.Class, sc).Observe(*r.RequestLatencyMs / 1000)
	}
	if r.InputTokensSource != "" {
		metricTokens.WithLabelValues("input", model, r.Class, sc).Observe(float64(r.InputTokens))
	}
	if r.OutputTokensSource != "" {
		metricTokens.WithLabelValues("output", model, r.Class, sc).Observe(float64(r.OutputTokens))
	}
}
