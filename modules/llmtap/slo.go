package llmtap

import (
	"fmt"

	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// sloTracker counts the live requests meeting and missing the handlers' SLOs; one per process,
// so that the counters stay monotonic across config reloads. Models are labelled with the one
// folding rule of /metrics (metrics.go). The engine's pipeline feeds it (engine.go), /metrics
// reads it (promexport.SLO) and GET /llmtap/slo reports it (api.Admin.SLOSummary).
var sloTracker = slo.NewTracker(modelLabels.Get, nil)

// passiveHeadroom holds the handlers' passive_headroom estimators, fed scrapes (scrape.go).
var passiveHeadroom headroom.Registry

// validateSLO checks the handler's SLOs.
func (h *Handler) validateSLO() error {
	if err := slo.Validate(h.SLO); err != nil {
		return fmt.Errorf("slo: %w", err)
	}
	return nil
}

// provisionSLO compiles the handler's SLOs; its records then carry them to sloTracker.
func (h *Handler) provisionSLO() error {
	if len(h.SLO) == 0 {
		return nil
	}
	if err := h.validateSLO(); err != nil {
		return err
	}
	h.slo = sloTracker.NewSet(h.SLO)
	return nil
}
