package llmtap

import (
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// The hooks below exist for the tests of package llmtap_test only: they read or reset the
// process-wide state (proc, the Prometheus collectors) that the end-to-end tests share.

// ResetModelLabels forgets the models the process-wide label set gave series to, so each test
// that loads a config starts with every place free, whatever models the tests before it sent.
// The Prometheus series those tests created stay; tests look only at their own models.
func ResetModelLabels() { modelLabels.Reset() }

// DeleteModelSeries removes the Prometheus series of the given model labels from llmtap's
// process-wide collectors, so a test that created many (long model names) leaves /metrics as
// small for the tests after it as it found it.
func DeleteModelSeries(models ...string) {
	for _, m := range models {
		requestMetrics.DeleteModel(m)
		usageMetrics.DeleteModel(m)
	}
}

// ResetTenantLabels forgets the tenants the process-wide tenant set gave series to.
func ResetTenantLabels() { tenantLabels.Reset() }

// SetGPUOpener makes the gpu feature open its source with open instead of NVML, so the
// end-to-end tests can drive it with go-nvml's mock or a fake; the returned function restores
// the real opener.
func SetGPUOpener(open func() (gpu.Source, error)) (restore func()) {
	prev := proc.openGPU
	proc.openGPU = open
	return func() { proc.openGPU = prev }
}

// SharedRunners is the number of runners held across configs (lifetimes.go): 0 once every
// config is unloaded and every drain has ended.
func SharedRunners() int {
	n := 0
	proc.pool.Range(func(any, any) bool { n++; return true })
	return n
}

// DashboardAddr returns the address the dashboard listener is bound to, empty when none is.
func DashboardAddr() string {
	if d := proc.dashboard.Load(); d != nil {
		return d.addr
	}
	return ""
}
