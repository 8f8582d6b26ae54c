package llmtap_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// TestSLOAttainment sends live traffic through Caddy to a mock whose TTFT straddles the SLO's
// threshold (10 ms for half the requests, 300 ms for the other half, against 150 ms) and fails
// some at once with a 500 (a failure misses every threshold), plus non-streaming requests (no
// TTFT: they miss it), requests for a model no SLO selects and requests of a tenant with an SLO
// of its own, and
// checks that llmtap_slo_requests_total and GET /llmtap/slo count exactly what the records
// say: per objective, the requests whose value is within the threshold.
func TestSLOAttainment(t *testing.T) {
	llmtap.ResetSLO()
	t.Cleanup(llmtap.ResetSLO)
	up := startUpstream(t, mock.Config{
		TTFT: 10 * time.Millisecond, ITL: 2 * time.Millisecond,
		TailFraction: 0.5, TailFactor: 30, ErrorRate: 0.15, Seed: 3,
	})
	const ttftMs, latencyMs = 150, 5000
	p, _ := loadProxy(t, "", site{body: fmt.Sprintf("\tllmtap {\n\t\ttenant header X-Team\n\t\tslo team-b {\n\t\t\ttenants team-b\n\t\t\tlatency 1ms\n\t\t}\n\t\tslo chat {\n\t\t\tmodels slo-*\n\t\t\tttft %dms\n\t\t\tlatency %dms\n\t\t\ttarget 90%%\n\t\t}\n\t}\n\treverse_proxy %s",
		ttftMs, latencyMs, up.addr)})
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	send := func(id, model string, stream bool) {
		resp, _, err := testkit.PostJSON(t.Context(), c, url, id, chatBody(model, 8, stream, false))
		if err != nil || resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: %v %v", id, resp, err)
		}
	}
	for i := range 16 {
		send(fmt.Sprintf("slo-stream-%d", i), "slo-a", true)
	}
	for i := range 2 {
		send(fmt.Sprintf("slo-unary-%d", i), "slo-a", false)
	}
	for i := range 3 {
		send(fmt.Sprintf("slo-other-%d", i), "other-model", true)
	}
	// Team b's requests go to its own SLO, listed first, whose 1 ms latency none can meet
	// (the mock waits 10 ms before its first token).
	for i := range 3 {
		req, err := testkit.NewPost(t.Context(), url, fmt.Sprintf("slo-team-b-%d", i), chatBody("slo-a", 8, true, false))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Team", "team-b")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// What the records say.
	within := func(v *float64, limit float64) bool { return v != nil && *v <= limit }
	want := map[string]uint64{} // objective -> met
	var total, failed, teamB uint64
	for id, r := range p.records(t) {
		if !strings.HasPrefix(id, "slo-") || r.Model != "slo-a" || r.Class != record.ClassLive {
			continue
		}
		if r.Tenant == "team-b" {
			teamB++
			continue
		}
		total++
		if !r.OK() {
			failed++
		}
		ttft := r.OK() && within(r.TTFTMs, ttftMs)
		lat := r.OK() && within(r.RequestLatencyMs, latencyMs)
		for obj, met := range map[string]bool{slo.ObjTTFT: ttft, slo.ObjLatency: lat, slo.ObjAll: ttft && lat} {
			if met {
				want[obj]++
			}
		}
	}
	if total != 18 || teamB != 3 {
		t.Fatalf("%d records of slo-a without a tenant and %d of team b, want 18 and 3", total, teamB)
	}
	for _, res := range []string{"met", "missed"} {
		want := map[string]float64{"met": 0, "missed": 3}[res]
		if v := p.metricValue(t, "llmtap_slo_requests_total", map[string]string{"slo": "team-b", "model": "slo-a", "objective": slo.ObjLatency, "result": res}); v != want {
			t.Errorf("team-b latency %s = %v, want %v", res, v, want)
		}
	}
	if failed == 0 || want[slo.ObjLatency] == total {
		t.Fatalf("%d of %d requests failed, %d within the latency: the test needs failures, which miss every threshold", failed, total, want[slo.ObjLatency])
	}
	if want[slo.ObjTTFT] == 0 || want[slo.ObjTTFT] == total {
		t.Fatalf("the mock's TTFT does not straddle the threshold: %d of %d within %d ms", want[slo.ObjTTFT], total, ttftMs)
	}

	// The counters on /metrics.
	for _, obj := range []string{slo.ObjTTFT, slo.ObjLatency, slo.ObjAll} {
		labels := map[string]string{"slo": "chat", "model": "slo-a", "objective": obj}
		labels["result"] = "met"
		met := p.metricValue(t, "llmtap_slo_requests_total", labels)
		labels["result"] = "missed"
		missed := p.metricValue(t, "llmtap_slo_requests_total", labels)
		if met != float64(want[obj]) || missed != float64(total-want[obj]) {
			t.Errorf("%s: %v met, %v missed; the records say %d and %d", obj, met, missed, want[obj], total-want[obj])
		}
	}
	for _, s := range p.metricSamples(t, "llmtap_slo_requests_total") {
		if s.labels["model"] != "slo-a" || s.labels["objective"] == slo.ObjITL {
			t.Errorf("unexpected series %v: only slo-a is selected, and the SLO sets no ITL", s.labels)
		}
	}
	if v := p.metricValue(t, "llmtap_slo_target", map[string]string{"slo": "chat", "model": "slo-a"}); v != 0.9 {
		t.Errorf("llmtap_slo_target = %v, want 0.9", v)
	}

	// GET /llmtap/slo.
	var doc struct {
		SLOs []slo.Report `json:"slos"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/slo"), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.SLOs) != 2 || doc.SLOs[0].SLO != "chat" || doc.SLOs[1].SLO != "team-b" {
		t.Fatalf("GET /llmtap/slo: %+v, want the series of chat and team-b", doc.SLOs)
	}
	rep := doc.SLOs[0]
	hour := rep.Windows[len(rep.Windows)-1] // the test runs well within an hour
	for _, w := range []slo.Window{rep.Total, hour} {
		if w.Requests != total || w.Good != want[slo.ObjAll] || w.Attainment[slo.ObjTTFT] != float64(want[slo.ObjTTFT])/float64(total) {
			t.Errorf("window %q: %+v; the records say %d requests, %d good, %d within the TTFT", w.Window, w, total, want[slo.ObjAll], want[slo.ObjTTFT])
		}
		if w.BurnRate == nil || *w.BurnRate <= 0 {
			t.Errorf("window %q: burn rate %v with misses", w.Window, w.BurnRate)
		}
	}
	if rep.SLO != "chat" || rep.Model != "slo-a" || rep.Target != 0.9 || rep.Thresholds.TTFTMs != ttftMs {
		t.Errorf("report %+v", rep)
	}
}
