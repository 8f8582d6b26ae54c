package llmtap

import "github.com/llmtap/llmtap/telemetry/gpu"

// SetGPUOpener makes the gpu feature open its source with open instead of NVML, so the
// end-to-end tests can drive it with go-nvml's mock or a fake; the returned function restores
// the real opener.
func SetGPUOpener(open func() (gpu.Source, error)) (restore func()) {
	prev := openGPU
	openGPU = open
	return func() { openGPU = prev }
}
