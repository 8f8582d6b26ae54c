package llmtap

import "github.com/llmtap/llmtap/telemetry/gpu"

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
