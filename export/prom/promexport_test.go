package prom

import (
	"testing"

	"github.com/llmtap/llmtap/internal/promtest"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

func ptr(v float64) *float64 { return &v }

// TestRequests feeds records through Consume and reads the series back: a success lands in
// the histograms, a failure only in the counters, a model past the label cap folds into
// "_other", the unusual outcomes are counted, and DeleteModel removes a model's series.
func TestRequests(t *testing.T) {
	m := NewRequests(RequestSources{Models: labelcap.New(1), InFlight: func() float64 { return 3 }})
	for _, r := range []*record.Record{
		{Model: "a", Class: record.ClassLive, Status: 200, DurationMs: 900, TTFTMs: ptr(100), ITLMs: ptr(10), RequestLatencyMs: ptr(800),
			InputTokens: 5, InputTokensSource: "usage", OutputTokens: 7, OutputTokensSource: "usage", DecodeStopped: "ratio"},
		{Model: "b", Class: record.ClassLive, Status: 500, Error: "http_status", DurationMs: 5},
		{Class: record.ClassShadow, Status: 101, DurationMs: 1, UsageInjection: "injected"},
	} {
		m.Consume(r)
	}
	promtest.Check(t, promtest.Gather(t, m.Collectors()...), map[string]float64{
		"llmtap_requests_total{class=live,model=a,status_class=2xx}":                              1,
		"llmtap_requests_total{class=live,model=_other,status_class=5xx}":                         1,
		"llmtap_requests_total{class=shadow,model=_unknown,status_class=1xx}":                     1,
		"llmtap_request_errors_total{class=live,error=http_status}":                               1,
		"gen_ai_server_time_to_first_token_seconds{class=live,model=a,status_class=2xx}":          1,
		"gen_ai_server_time_to_first_token_seconds{class=live,model=_other,status_class=5xx}":     0,
		"gen_ai_server_time_per_output_token_seconds{class=live,model=a,status_class=2xx}":        1,
		"gen_ai_server_request_duration_seconds{class=live,model=a,status_class=2xx}":             1,
		"gen_ai_client_operation_duration_seconds{class=live,model=_other,status_class=5xx}":      1,
		"gen_ai_client_token_usage{class=live,gen_ai_token_type=output,model=a,status_class=2xx}": 1,
		"llmtap_decode_stopped_total{reason=ratio}":                                               1,
		"llmtap_usage_injection_total{outcome=injected}":                                          1,
		"llmtap_upgraded_total{class=shadow}":                                                     1,
		"llmtap_streams_in_flight":                                                                3,
	})
	for _, reason := range []string{"queue_full", "queue_bytes"} {
		if _, ok := promtest.Gather(t, m.Collectors()...)["llmtap_records_dropped_total{reason="+reason+"}"]; !ok {
			t.Errorf("llmtap_records_dropped_total{reason=%q} is missing without a Dropped source", reason)
		}
	}
	m.DeleteModel("a")
	promtest.Check(t, promtest.Gather(t, m.Collectors()...), map[string]float64{
		"llmtap_requests_total{class=live,model=a,status_class=2xx}":                     0,
		"gen_ai_server_time_to_first_token_seconds{class=live,model=a,status_class=2xx}": 0,
		"llmtap_requests_total{class=live,model=_other,status_class=5xx}":                1,
	})
}

// TestRecordsDroppedByReason splits the pipeline's drops: queue_bytes is DroppedBytes,
// queue_full the rest.
func TestRecordsDroppedByReason(t *testing.T) {
	m := NewRequests(RequestSources{Models: labelcap.New(1),
		Dropped: func() float64 { return 10 }, DroppedBytes: func() float64 { return 4 }})
	promtest.Check(t, promtest.Gather(t, m.Collectors()...), map[string]float64{
		"llmtap_records_dropped_total{reason=queue_full}":  6,
		"llmtap_records_dropped_total{reason=queue_bytes}": 4,
	})
}
