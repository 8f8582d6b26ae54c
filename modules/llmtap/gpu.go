package llmtap

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"

	"github.com/llmtap/llmtap/internal/limits"
)

// GPUConfig configures GPU sampling through NVML (JSON `"gpu"` of the llmtap app, Caddyfile
// `gpu { … }` in the llmtap global option).
//
// Sampling is on by default whenever the llmtap app is loaded: every GPU NVML reports is read
// (power, total energy counter, GPU and memory utilization, memory used/total, temperature,
// SM and memory clocks, clock-event reasons) on an interval, and the samples feed the
// timeline, the per-request GPU figures (record field "gpu") and the exporters. On a host
// without the NVML library, driver or GPUs — or in a binary built without cgo — the app logs
// that once, at info level, and runs without GPU data; nothing fails. A dcgm-exporter scrape
// (`scrape <url> { kind dcgm }`) then stands in.
//
// A reload whose GPU configuration is unchanged keeps the running sampler (the same NVML
// session, no gap, no second poller); a changed interval replaces the sampler when the new
// config starts (the old one stops first, so two never poll at once).
type GPUConfig struct {
	// Interval is the time between two polls of every GPU. Shorter intervals follow a
	// request's prefill and decode more closely; one poll of an H200 took about 3.5 ms.
	// Default: 250ms.
	Interval caddy.Duration `json:"interval,omitempty"`

	// Off turns GPU sampling off. Default: false (sampling on).
	Off bool `json:"off,omitempty"`

	// PricePerGPUHour is what one GPU-hour costs, in any currency unit: each record then gets
	// a cost (its GPU-seconds at this price, and per million of its tokens), summed per tenant
	// in llmtap_cost_total, the summary's usage rows and reports. GPU-seconds split each
	// sample interval equally among the requests in flight, so costs inherit that split.
	// Default: 0 (no cost).
	PricePerGPUHour float64 `json:"price_per_gpu_hour,omitempty"`
}

// price is the price per GPU-hour, 0 without one.
func (c *GPUConfig) price() float64 {
	if c == nil || c.Off {
		return 0
	}
	return c.PricePerGPUHour
}

func (c *GPUConfig) interval() time.Duration {
	if c == nil || c.Interval <= 0 {
		return gpu.DefaultInterval
	}
	return time.Duration(c.Interval)
}

func (c *GPUConfig) validate() error {
	if c != nil && c.Interval < 0 {
		return fmt.Errorf("interval must be positive, got %v", time.Duration(c.Interval))
	}
	if c != nil && !(c.PricePerGPUHour >= 0 && c.PricePerGPUHour <= limits.MaxPrice) {
		return fmt.Errorf("price_per_gpu_hour must be a number from 0 to %g (limits.MaxPrice), got %v", float64(limits.MaxPrice), c.PricePerGPUHour)
	}
	return nil
}

// gpuRunner is the process's NVML sampler (a gpu.Runner), shared by every config with GPU
// sampling on (proc.pool, key "gpu") and reconfigured in place by each one that adopts it.
type gpuRunner struct {
	*liveLogger
	run *gpu.Runner
}

// startGPU adopts the running sampler (reconfiguring it) or starts one.
func (a *App) startGPU() (err error) {
	proc.hub.SetPrice(a.GPU.price()) // each record's cost (telemetry/timeline)
	if a.GPU != nil && a.GPU.Off {
		return nil
	}
	a.gpu, err = adopt(keyGPU, a.logger, newGPURunner, func(r *gpuRunner) error { return r.configure(a.GPU.interval()) })
	return err
}

// stopGPU lets go of the App's hold; the sampler stops when no loaded config uses it.
func (a *App) stopGPU() { release(keyGPU, &a.gpu) }

func newGPURunner(l *liveLogger) *gpuRunner {
	r := &gpuRunner{liveLogger: l}
	g := &gpu.Runner{
		Open: func() (gpu.Source, error) { return proc.openGPU() },
		OnOpenError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				if proc.nvmlAbsentLogged.CompareAndSwap(false, true) {
					r.log().Info("GPU sampling is off: NVML is not available on this host", zap.Error(err))
				}
				return
			}
			// A GPU that fails to open is not a reason to refuse the config: the proxy and its
			// measurements work without GPU data.
			r.log().Error("GPU sampling is off: opening NVML failed", zap.Error(err))
		},
		OnError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				r.log().Warn("GPU sampling stopped: NVML went away", zap.Error(err))
				return
			}
			r.log().Warn("reading a GPU failed", zap.Error(err))
		},
		OnCloseError: func(err error) { r.log().Warn("closing NVML", zap.Error(err)) },
	}
	g.OnSamples = func(s []gpu.Sample) {
		if proc.gpu.Load() == g {
			proc.hub.OnGPU(s, inFlight())
		}
	}
	r.run = g
	proc.gpu.Store(g)
	return r
}

// configure makes the runner sample every interval: nothing changes when it already does,
// otherwise the running sampler stops and a new one starts. A host without NVML, or an NVML
// that fails to open, leaves GPU sampling off without failing the config.
func (r *gpuRunner) configure(interval time.Duration) error {
	started, err := r.run.Configure(interval)
	if started {
		r.log().Debug("GPU sampling started", zap.Duration("interval", interval))
	}
	return err
}

// Destruct stops sampling when the last config using it is gone.
func (r *gpuRunner) Destruct() error {
	r.run.Stop()
	proc.gpu.CompareAndSwap(r.run, nil)
	if !nvmlActive() {
		proc.hub.ClearGPU()
	}
	return nil
}

// nvmlActive reports whether an NVML sampler feeds the hub, in which case a dcgm-exporter
// scrape's GPU samples are ignored rather than counted twice.
func nvmlActive() bool {
	g := proc.gpu.Load()
	return g != nil && g.Active()
}

// LatestGPUSamples appends the latest poll of every GPU (one sample per GPU, from NVML or,
// without it, a dcgm-exporter scrape) to dst and returns the extended slice; it appends
// nothing when no GPU source runs. The OpenTelemetry exporter reads the hw.* gauges from it.
func LatestGPUSamples(dst []gpu.Sample) []gpu.Sample { return proc.hub.LatestGPU(dst) }
