package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// TestSLOSummary: GET /llmtap/slo reports the tracker's series; another method is a 405, a
// host without a tracker a 404.
func TestSLOSummary(t *testing.T) {
	tr := slo.NewTracker(nil, nil)
	set := tr.NewSet([]slo.Objective{{Name: "chat", LatencyMs: 100}})
	for _, ms := range []float64{50, 150} {
		tr.Count(&record.Record{Class: record.ClassLive, Model: "m", RequestLatencyMs: &ms}, set)
	}
	h := fakeHost{slo: tr}
	w := httptest.NewRecorder()
	if err := api.SLOSummary(h, w, httptest.NewRequest(http.MethodGet, "/llmtap/slo", nil)); err != nil {
		t.Fatal(err)
	}
	var doc api.SLODoc
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.SLOs) != 1 || doc.SLOs[0].SLO != "chat" || doc.SLOs[0].Total.Requests != 2 || doc.SLOs[0].Total.Attainment[slo.ObjLatency] != 0.5 {
		t.Errorf("GET /llmtap/slo: %s", w.Body.Bytes())
	}
	var he *api.HTTPError
	if err := api.SLOSummary(h, httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/llmtap/slo", nil)); !errors.As(err, &he) || he.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v, want a 405", err)
	}
	h.slo = nil
	if err := api.SLOSummary(h, httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/llmtap/slo", nil)); !errors.As(err, &he) || he.Status != http.StatusNotFound {
		t.Errorf("no tracker: %v, want a 404", err)
	}
}
