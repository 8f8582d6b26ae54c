package llmtap

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// registerCollectors registers every llmtap collector in reg (Caddy makes a new registry per
// config load), tolerating ones already there. The collectors are created once per process,
// so counts survive reloads. Both the llmtap app and the handler call it, so a config with
// either one alone serves all of llmtap's metrics, the GPU readings included.
func registerCollectors(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	all := append(collectors[:len(collectors):len(collectors)], // metrics.go, with the GPU and mirror collectors
		recorderCollector{}, shadowCollector{}, metricGuardPauses, metricGuardResumes, metricForged, metricMarkExpired, metricMarkReplayed)
	for _, c := range all {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}
