package api

import (
	"net/http"

	"github.com/llmtap/llmtap/telemetry/slo"
)

// SLODoc is the document GET /llmtap/slo returns.
type SLODoc struct {
	// SLOs holds the attainment of each (SLO, model) that has counted a request.
	SLOs []slo.Report `json:"slos"`
	// Dropped counts the requests not counted because the tracker held its maximum of
	// (SLO, model) series already.
	Dropped uint64 `json:"dropped"`
}

// SLOSummary serves GET /llmtap/slo: attainment, goodput and burn rate per (SLO, model), in
// total and over rolling windows (docs/slo.md). Without a tracker it is a 404.
func SLOSummary(h Host, w http.ResponseWriter, r *http.Request) error {
	if err := AllowMethod(r, http.MethodGet); err != nil {
		return err
	}
	tr := h.SLO()
	if tr == nil {
		return Errorf(http.StatusNotFound, "this host tracks no SLOs")
	}
	flush(h) // so that requests ended before this one are counted
	return writeJSON(w, SLODoc{SLOs: tr.Reports(), Dropped: tr.Dropped()})
}
