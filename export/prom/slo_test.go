package prom

import (
	"testing"

	"github.com/llmtap/llmtap/internal/promtest"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// TestSLO reads a tracker's counts through the collector: a met and a missed series per
// objective the SLO sets (ttft, all), the target, and the dropped counter.
func TestSLO(t *testing.T) {
	tr := slo.NewTracker(nil, nil)
	set := tr.NewSet([]slo.Objective{{Name: "chat", TTFTMs: 100, Target: 0.95}})
	for _, ms := range []float64{50, 60, 500} {
		tr.Count(&record.Record{Class: record.ClassLive, Model: "m", TTFTMs: &ms}, set)
	}
	got := promtest.Gather(t, SLO{Tracker: tr})
	promtest.Check(t, got, map[string]float64{
		"llmtap_slo_requests_total{model=m,objective=ttft,result=met,slo=chat}":    2,
		"llmtap_slo_requests_total{model=m,objective=ttft,result=missed,slo=chat}": 1,
		"llmtap_slo_requests_total{model=m,objective=all,result=met,slo=chat}":     2,
		"llmtap_slo_requests_total{model=m,objective=all,result=missed,slo=chat}":  1,
		"llmtap_slo_target{model=m,slo=chat}":                                      0.95,
	})
	if v, ok := got["llmtap_slo_dropped_total"]; !ok || v != 0 {
		t.Errorf("llmtap_slo_dropped_total = %v (present %v), want 0", v, ok)
	}
	if _, ok := got["llmtap_slo_requests_total{model=m,objective=itl,result=met,slo=chat}"]; ok {
		t.Error("an ITL series for an SLO without an ITL threshold")
	}
}
