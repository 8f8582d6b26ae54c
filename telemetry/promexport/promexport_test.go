package promexport

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

func ptr(v float64) *float64 { return &v }

// gather registers cs in a fresh pedantic registry (which checks every series against its
// descriptor) and returns each sample's value (counter, gauge, or a histogram's count) by
// name{label="value",…}, labels sorted.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			out[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// check compares the samples named in want; a want of 0 means "absent".
func check(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; g != v || (v == 0 && ok) {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

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
	check(t, gather(t, m.Collectors()...), map[string]float64{
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
		if _, ok := gather(t, m.Collectors()...)["llmtap_records_dropped_total{reason="+reason+"}"]; !ok {
			t.Errorf("llmtap_records_dropped_total{reason=%q} is missing without a Dropped source", reason)
		}
	}
	m.DeleteModel("a")
	check(t, gather(t, m.Collectors()...), map[string]float64{
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
	check(t, gather(t, m.Collectors()...), map[string]float64{
		"llmtap_records_dropped_total{reason=queue_full}":  6,
		"llmtap_records_dropped_total{reason=queue_bytes}": 4,
	})
}

// TestMirrorAndShadow reads fixed mirror and shadow states through their collectors.
func TestMirrorAndShadow(t *testing.T) {
	mc := Mirror(func() MirrorReading {
		return MirrorReading{
			Counters: mirror.Counters{Sampled: 9, Sent: 7, Completed: 5, Failed: 1, Cut: 3, InFlight: 1, Skipped: map[string]uint64{mirror.SkipPaused: 2}},
			Gate:     mirror.GateState{Paused: true, Pauses: 4}, Pairs: 5,
		}
	})
	sc := Shadow(func() []inproc.Status {
		return []inproc.Status{{Name: "s", OK: 3, Errors: 1, Dropped: 2, InFlight: 1, Rate: 4, State: inproc.StatePaused}}
	})
	got := gather(t, mc, sc)
	check(t, got, map[string]float64{
		"llmtap_mirror_sampled_total": 9, "llmtap_mirror_sent_total": 7, "llmtap_mirror_completed_total": 5,
		"llmtap_mirror_failed_total": 1, "llmtap_mirror_cut_total": 3, "llmtap_mirror_in_flight": 1, "llmtap_mirror_paused": 1,
		"llmtap_mirror_pauses_total": 4, "llmtap_mirror_pairs_total": 5,
		"llmtap_mirror_skipped_total{reason=paused}":          2,
		"llmtap_shadow_requests_total{result=ok,shadow=s}":    3,
		"llmtap_shadow_requests_total{result=error,shadow=s}": 1,
		"llmtap_shadow_dropped_total{shadow=s}":               2,
		"llmtap_shadow_in_flight{shadow=s}":                   1,
		"llmtap_shadow_rate{shadow=s}":                        4,
		"llmtap_shadow_paused{shadow=s}":                      1,
	})
	for _, reason := range mirror.SkipReasons {
		if _, ok := got["llmtap_mirror_skipped_total{reason="+reason+"}"]; !ok {
			t.Errorf("no skip series for reason %s", reason)
		}
	}
}
