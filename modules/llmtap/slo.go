package llmtap

import (
	"fmt"

	"github.com/llmtap/llmtap/telemetry/slo"
)

// validateSLO checks the handler's SLOs.
func (h *Handler) validateSLO() error {
	if err := slo.Validate(h.SLO); err != nil {
		return fmt.Errorf("slo: %w", err)
	}
	return nil
}

// provisionSLO compiles the handler's SLOs; its records then carry them to the Process's SLO
// tracker, which /metrics and GET /llmtap/slo report.
func (h *Handler) provisionSLO() error {
	if len(h.SLO) == 0 {
		return nil
	}
	if err := h.validateSLO(); err != nil {
		return err
	}
	h.slo = h.proc.SLO.NewSet(h.SLO)
	return nil
}
