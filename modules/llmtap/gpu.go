package llmtap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

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
	if c != nil && (c.PricePerGPUHour < 0 || math.IsNaN(c.PricePerGPUHour) || math.IsInf(c.PricePerGPUHour, 0)) {
		return fmt.Errorf("price_per_gpu_hour must be a positive number, got %v", c.PricePerGPUHour)
	}
	return nil
}

// parseGPU reads the gpu subdirective (the dispenser is on its name):
//
//	gpu [off] {
//	    interval           <duration>
//	    price_per_gpu_hour <amount>
//	    off
//	}
func parseGPU(a *App, d *caddyfile.Dispenser) error {
	if a.GPU == nil {
		a.GPU = new(GPUConfig)
	}
	off, err := parseOffArg(d, "gpu")
	if err != nil {
		return err
	}
	a.GPU.Off = a.GPU.Off || off
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "interval":
			dur, err := parseDurationArg(d, "gpu")
			if err != nil {
				return err
			}
			a.GPU.Interval = dur
		case "price_per_gpu_hour":
			if !d.NextArg() {
				return d.Err("gpu price_per_gpu_hour needs an amount, such as 2.50")
			}
			v, err := strconv.ParseFloat(d.Val(), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) {
				return d.Errf("gpu price_per_gpu_hour: %q is not a positive amount, such as 2.50", d.Val())
			}
			if d.NextArg() {
				return d.Errf("gpu price_per_gpu_hour takes one amount, got another: %q", d.Val())
			}
			a.GPU.PricePerGPUHour = v
		case "off":
			if err := parseOffOption(d, "gpu"); err != nil {
				return err
			}
			a.GPU.Off = true
		default:
			return d.Errf("unknown gpu option %q; expected interval, price_per_gpu_hour or off", opt)
		}
	}
	return nil
}

// gpuRunner is the process's NVML sampler, shared by every config with GPU sampling on
// (proc.pool, key "gpu") and reconfigured in place by each one that adopts it.
type gpuRunner struct {
	*liveLogger

	mu       sync.Mutex // held while (re)configuring and by nvmlActive
	interval time.Duration
	src      gpu.Source // nil while NVML is absent or failed to open
	sampler  *gpu.Sampler
	unsub    func()
}

// startGPU adopts the running sampler (reconfiguring it) or starts one.
func (a *App) startGPU() (err error) {
	proc.hub.attr.SetPrice(a.GPU.price()) // each record's cost (telemetry/timeline)
	if a.GPU != nil && a.GPU.Off {
		return nil
	}
	a.gpu, err = adopt(keyGPU, a.logger, func(l *liveLogger) *gpuRunner { return &gpuRunner{liveLogger: l} },
		func(r *gpuRunner) error { return r.configure(a.GPU.interval()) })
	return err
}

// stopGPU lets go of the App's hold; the sampler stops when no loaded config uses it.
func (a *App) stopGPU() { release(keyGPU, &a.gpu) }

// configure makes the runner sample every interval: nothing changes when it already does,
// otherwise the running sampler stops and a new one starts. A host without NVML, or an NVML
// that fails to open, leaves GPU sampling off without failing the config.
func (r *gpuRunner) configure(interval time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampler != nil && r.interval == interval && r.sampler.Err() == nil {
		return nil
	}
	r.stopLocked()
	src, err := proc.openGPU()
	if errors.Is(err, gpu.ErrNoNVML) {
		if proc.nvmlAbsentLogged.CompareAndSwap(false, true) {
			r.log().Info("GPU sampling is off: NVML is not available on this host", zap.Error(err))
		}
		return nil
	}
	if err != nil {
		// A GPU that fails to open is not a reason to refuse the config: the proxy and its
		// measurements work without GPU data.
		r.log().Error("GPU sampling is off: opening NVML failed", zap.Error(err))
		return nil
	}
	r.interval, r.src = interval, src
	r.sampler = gpu.NewSampler(src, gpu.Options{
		Interval: interval,
		OnError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				r.log().Warn("GPU sampling stopped: NVML went away", zap.Error(err))
				return
			}
			r.log().Warn("reading a GPU failed", zap.Error(err))
		},
	})
	r.unsub = r.sampler.Subscribe(func(s []gpu.Sample) {
		if proc.gpu.Load() == r {
			proc.hub.onGPU(s)
		}
	})
	proc.gpu.Store(r)
	if err := r.sampler.Start(context.Background()); err != nil {
		r.stopLocked()
		return err
	}
	r.log().Debug("GPU sampling started", zap.Duration("interval", interval))
	return nil
}

// stopLocked stops the sampler and closes its source, if one runs.
func (r *gpuRunner) stopLocked() {
	if r.sampler == nil {
		return
	}
	r.unsub()
	r.sampler.Stop()
	if err := r.src.Close(); err != nil {
		r.log().Warn("closing NVML", zap.Error(err))
	}
	r.sampler, r.src, r.unsub = nil, nil, nil
}

// Destruct stops sampling when the last config using it is gone.
func (r *gpuRunner) Destruct() error {
	r.mu.Lock()
	r.stopLocked()
	r.mu.Unlock()
	proc.gpu.CompareAndSwap(r, nil)
	if !nvmlActive() {
		proc.hub.clearGPU()
	}
	return nil
}

// nvmlActive reports whether an NVML sampler feeds the hub, in which case a dcgm-exporter
// scrape's GPU samples are ignored rather than counted twice.
func nvmlActive() bool {
	r := proc.gpu.Load()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampler == nil {
		return false
	}
	select {
	case <-r.sampler.Done():
		return false // turned itself off (NVML went away)
	default:
		return true
	}
}

// LatestGPUSamples appends the latest poll of every GPU (one sample per GPU, from NVML or,
// without it, a dcgm-exporter scrape) to dst and returns the extended slice; it appends
// nothing when no GPU source runs. The OpenTelemetry exporter reads the hw.* gauges from it.
func LatestGPUSamples(dst []gpu.Sample) []gpu.Sample { return proc.hub.latestGPU(dst) }
