package llmtap

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// The helpers below exist for the tests of package llmtap_test only: they reach the running
// process.Process (the one the llmtap app holds), or build the one the next config adopts.

// Running is the Process the loaded config's llmtap app holds, nil when none.
func Running() *process.Process { return running.Load() }

// ResetModelLabels forgets the models the running process's label set gave series to, so each
// test that loads a config starts with every place free, whatever models the tests before it
// sent. The Prometheus series those tests created stay; tests look only at their own models.
func ResetModelLabels() {
	if p := running.Load(); p != nil {
		p.Models.Reset()
	}
}

// DeleteModelSeries removes the Prometheus series of the given model labels from the running
// process's collectors, so a test that created many (long model names) leaves /metrics as
// small for the tests after it as it found it.
func DeleteModelSeries(models ...string) {
	if p := running.Load(); p != nil {
		p.DeleteModelSeries(models...)
	}
}

// ResetTenantLabels forgets the tenants the running process's tenant set gave series to.
func ResetTenantLabels() {
	if p := running.Load(); p != nil {
		p.Tenants.Reset()
	}
}

// SetGPUOpener builds the Process the next config adopts, its GPU sampler opening its source
// with open instead of NVML, so the end-to-end tests can drive it with go-nvml's mock or a
// fake. It waits (at most 10 s) for the Process of an earlier config to close first. The
// returned function lets go of the test's hold; the Process closes with the last config.
func SetGPUOpener(open func() (gpu.Source, error)) (release func()) {
	for deadline := time.Now().Add(10 * time.Second); running.Load() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			panic("SetGPUOpener: the Process of an earlier config is still held")
		}
	}
	if _, err := holdProcess(func() process.Options { return process.Options{OpenGPU: open} }); err != nil {
		panic(err)
	}
	return releaseProcess
}

// SharedRunners is the number of runners held across configs: the Process and those it
// holds; 0 once every config is unloaded and every drain has ended.
func SharedRunners() int {
	n := 0
	procs.Range(func(any, any) bool { n++; return true })
	if p := running.Load(); p != nil {
		n += p.Runners()
	}
	return n
}

// DashboardAddr returns the address the dashboard listener is bound to, empty when none is.
func DashboardAddr() string {
	a, err := caddy.ActiveContext().AppIfConfigured("llmtap")
	if err != nil || a.(*App).dash == nil {
		return ""
	}
	return a.(*App).dash.addr
}

// ActiveTap is the running Process's measurement engine, nil when none runs.
func ActiveTap() *tap.Tap {
	if p := running.Load(); p != nil {
		return p.Tap()
	}
	return nil
}

// ActiveTimeline is the running Process's timeline, nil when none runs.
func ActiveTimeline() *timeline.Timeline {
	if p := running.Load(); p != nil {
		return p.Hub.Timeline()
	}
	return nil
}

// LatestGPUSamples appends the running Process's latest GPU samples to dst.
func LatestGPUSamples(dst []gpu.Sample) []gpu.Sample {
	if p := running.Load(); p != nil {
		return p.Hub.LatestGPU(dst)
	}
	return dst
}

// RecorderDropped is the number of records the running Process lost to recording.
func RecorderDropped() uint64 {
	if p := running.Load(); p != nil {
		return p.RecorderDropped()
	}
	return 0
}

// MirrorGate is the running Process's mirroring pause switch.
func MirrorGate() *mirror.Gate { return running.Load().Mirroring.Gate }
