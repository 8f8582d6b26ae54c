package llmtap

import (
	"fmt"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/telemetry/gpu"
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

// startGPU adopts the running sampler (reconfiguring it) or starts one.
func (a *App) startGPU() (release func(), err error) {
	if a.GPU == nil || !a.GPU.Off {
		release, err = a.proc.HoldGPU(a.logger, a.GPU.interval())
	}
	// A price with nothing to price: say so when the config loads, not only in the surfaces.
	if dcgm := slices.ContainsFunc(a.Scrape, func(s ScrapeConfig) bool { return s.Kind == "dcgm" }); err == nil && !dcgm &&
		a.GPU != nil && a.GPU.PricePerGPUHour > 0 && (a.GPU.Off || !a.proc.GPUSampling()) {
		a.logger.Warn("price_per_gpu_hour is set but no GPU is sampled (NVML is not available or gpu is off, and no dcgm scrape is configured): requests get no GPU time and no cost, and every surface says \"no GPU samples\"",
			zap.Float64("price_per_gpu_hour", a.GPU.PricePerGPUHour))
	}
	return release, err
}
