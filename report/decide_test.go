package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

func ms(v float64) *float64 { return &v }

// TestSLOAttainmentRules counts by goodput's rules: a failed request misses every objective,
// one without the value (no TTFT) misses that one, a value equal to its threshold meets it;
// rows are per class, model and tenant.
func TestSLOAttainmentRules(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	recs := []*record.Record{
		{Class: "live", Model: "m", Tenant: "a", TTFTMs: ms(100), RequestLatencyMs: ms(900)},               // meets both
		{Class: "live", Model: "m", Tenant: "a", TTFTMs: ms(101), RequestLatencyMs: ms(900)},               // misses the TTFT
		{Class: "live", Model: "m", Tenant: "a", RequestLatencyMs: ms(1000)},                               // no TTFT
		{Class: "live", Model: "m", Tenant: "a", TTFTMs: ms(1), RequestLatencyMs: ms(1), Error: "timeout"}, // failed
		{Class: "live", Model: "m", Tenant: "b", TTFTMs: ms(1), RequestLatencyMs: ms(1)},
	}
	for i, r := range recs {
		r.Start = t0.Add(time.Duration(i) * time.Millisecond)
	}
	slos, err := stats.ParseSLOs("time_to_first_token:100 request_latency:1000")
	if err != nil {
		t.Fatal(err)
	}
	rows := SLOAttainment(&Run{Name: "r", Records: recs}, slos, 0.9)
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want tenants a and b", rows)
	}
	a := rows[0]
	if a.Tenant != "a" || a.Requests != 4 || a.Good != 1 || a.Met["time_to_first_token"] != 1 || a.Met["request_latency"] != 3 {
		t.Errorf("tenant a: %+v, want 4 requests, 1 good, TTFT met by 1, latency by 3", a)
	}
	if a.Attainment["all"] != 0.25 || fmt.Sprintf("%.6f", a.BurnRate) != "7.500000" {
		t.Errorf("tenant a: attainment %v, burn rate %v; want 0.25 and 0.75/0.1", a.Attainment, a.BurnRate)
	}
	if b := rows[1]; b.Tenant != "b" || b.Good != 1 || b.BurnRate != 0 {
		t.Errorf("tenant b: %+v", b)
	}
	if SLOAttainment(&Run{Records: recs}, nil, 0.9) != nil {
		t.Error("rows without SLOs")
	}
}

// TestCanaryPairsByRequestID pairs live and mirror records of the same id whatever their
// order in the run, leaves unpaired records out, and judges with the options given.
func TestCanaryPairsByRequestID(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	var recs []*record.Record
	for i := range 40 {
		id := fmt.Sprintf("r%d", i)
		start := t0.Add(time.Duration(i) * time.Second)
		recs = append(recs,
			&record.Record{RequestID: id, Class: record.ClassMirror, Model: "m", Start: start, DurationMs: 300,
				TTFTMs: ms(300), RequestLatencyMs: ms(300), OutputTokens: 8},
			&record.Record{RequestID: id, Class: record.ClassLive, Model: "m", Start: start, DurationMs: 200,
				TTFTMs: ms(200), RequestLatencyMs: ms(200), OutputTokens: 8})
	}
	// A live request without a copy, and a copy of a request the run does not hold.
	recs = append(recs, &record.Record{RequestID: "lone", Class: record.ClassLive, Model: "m", Start: t0, TTFTMs: ms(1)},
		&record.Record{RequestID: "orphan", Class: record.ClassMirror, Model: "m", Start: t0, TTFTMs: ms(1)})
	rows := Canary(&Run{Name: "r", Records: recs}, mirror.VerdictOptions{FirstLook: 40, Looks: 1}, nil)
	if len(rows) != 1 {
		t.Fatalf("rows %+v, want one model", rows)
	}
	v := rows[0]
	if v.Pairs != 40 || v.Outcome != mirror.VerdictWorse || v.Live != 41 || v.Paired != 40 {
		t.Errorf("%+v: want worse over 40 pairs, 40 of 41 live requests paired", v)
	}
	for _, c := range v.Comparisons {
		if c.Name == mirror.SLOAttainment {
			t.Errorf("an SLO attainment without SLOs: %+v", c)
		}
	}
	// With the report's SLOs (TTFT ≤ 250 ms) both sides are judged: live 200 ms meets it,
	// the mirror's 300 ms misses it.
	slos, err := stats.ParseSLOs("time_to_first_token:250")
	if err != nil {
		t.Fatal(err)
	}
	rows = Canary(&Run{Name: "r", Records: recs}, mirror.VerdictOptions{FirstLook: 40, Looks: 1}, slos)
	var attain *mirror.MetricVerdict
	for i, c := range rows[0].Comparisons {
		if c.Name == mirror.SLOAttainment {
			attain = &rows[0].Comparisons[i]
		}
	}
	if attain == nil || attain.Base != 1 || attain.Other != 0 || attain.Count != 40 || attain.Outcome != mirror.VerdictWorse {
		t.Errorf("SLO attainment %+v: want live 1, mirror 0 over 40 pairs, worse", attain)
	}
	if rows := Canary(&Run{Records: recs[:2]}, mirror.VerdictOptions{}, nil); len(rows) != 1 || rows[0].Outcome != mirror.VerdictNotEnough {
		t.Errorf("one pair: %+v, want not enough pairs yet", rows)
	}
	if Canary(&Run{Records: recs[1:2]}, mirror.VerdictOptions{}, nil) != nil {
		t.Error("a verdict without mirror records")
	}
}
