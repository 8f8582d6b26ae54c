package llmtap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

func init() {
	registerAppFeature(appFeature{
		name:          "gpu",
		subdirectives: []string{"gpu"},
		parse:         parseGPU,
		validate:      func(a *App) error { return a.GPU.validate() },
		start:         startGPU,
		stop:          stopGPU,
	})
}

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
// session, no gap, no second poller); a changed interval starts a new sampler, and the old
// one stops when the old config is unloaded.
type GPUConfig struct {
	// Interval is the time between two polls of every GPU. Shorter intervals follow a
	// request's prefill and decode more closely; one poll of an H200 took about 3.5 ms.
	// Default: 250ms.
	Interval caddy.Duration `json:"interval,omitempty"`

	// Off turns GPU sampling off. Default: false (sampling on).
	Off bool `json:"off,omitempty"`
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
	return nil
}

// parseGPU reads the gpu subdirective (the dispenser is on its name):
//
//	gpu [off] {
//	    interval <duration>
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
		case "off":
			if err := parseOffOption(d, "gpu"); err != nil {
				return err
			}
			a.GPU.Off = true
		default:
			return d.Errf("unknown gpu option %q; expected interval or off", opt)
		}
	}
	return nil
}

// openGPU opens the GPU source; tests replace it with a source built on go-nvml's mock.
var openGPU = gpu.Open

// gpuRunner is the process's NVML sampler with the configuration it was started with. One is
// current at a time; configs that want the same interval share it (refs).
type gpuRunner struct {
	interval time.Duration
	src      gpu.Source
	sampler  *gpu.Sampler
	unsub    func()
	refs     int // under gpuMu
}

var (
	gpuMu  sync.Mutex
	gpuCur *gpuRunner
	// gpuFeed is the runner whose samples the hub takes; a runner being replaced by a reload
	// keeps polling until its config is unloaded, but its samples are ignored, so nothing is
	// counted twice.
	gpuFeed atomic.Pointer[gpuRunner]
	// nvmlAbsentLogged makes "no NVML" an info line once per process, not once per reload.
	nvmlAbsentLogged atomic.Bool
)

// startGPU adopts the running sampler when its interval matches, or starts one.
func startGPU(a *App) error {
	if a.GPU != nil && a.GPU.Off {
		return nil
	}
	r, err := acquireGPU(a.GPU.interval(), a.logger)
	if err != nil {
		return err
	}
	if r != nil {
		a.setFeatureState("gpu", r)
	}
	return nil
}

// stopGPU releases the App's hold; the sampler stops when no loaded config uses it.
func stopGPU(a *App) error {
	r, _ := a.featureState("gpu").(*gpuRunner)
	if r == nil {
		return nil
	}
	a.setFeatureState("gpu", nil)
	return releaseGPU(r)
}

func acquireGPU(interval time.Duration, logger *zap.Logger) (*gpuRunner, error) {
	gpuMu.Lock()
	defer gpuMu.Unlock()
	if r := gpuCur; r != nil && r.interval == interval && r.sampler.Err() == nil {
		r.refs++
		return r, nil
	}
	src, err := openGPU()
	if errors.Is(err, gpu.ErrNoNVML) {
		if nvmlAbsentLogged.CompareAndSwap(false, true) {
			logger.Info("GPU sampling is off: NVML is not available on this host", zap.Error(err))
		}
		return nil, nil
	}
	if err != nil {
		// A GPU that fails to open is not a reason to refuse the config: the proxy and its
		// measurements work without GPU data.
		logger.Error("GPU sampling is off: opening NVML failed", zap.Error(err))
		return nil, nil
	}
	r := &gpuRunner{interval: interval, src: src, refs: 1}
	r.sampler = gpu.NewSampler(src, gpu.Options{
		Interval: interval,
		OnError: func(err error) {
			if errors.Is(err, gpu.ErrNoNVML) {
				logger.Warn("GPU sampling stopped: NVML went away", zap.Error(err))
				return
			}
			logger.Warn("reading a GPU failed", zap.Error(err))
		},
	})
	r.unsub = r.sampler.Subscribe(func(s []gpu.Sample) {
		if gpuFeed.Load() == r {
			hub.onGPU(s)
		}
	})
	gpuCur = r
	gpuFeed.Store(r)
	if err := r.sampler.Start(context.Background()); err != nil {
		return nil, err
	}
	logger.Debug("GPU sampling started", zap.Duration("interval", interval))
	return r, nil
}

func releaseGPU(r *gpuRunner) error {
	gpuMu.Lock()
	r.refs--
	last := r.refs == 0
	if last && gpuCur == r {
		gpuCur = nil
		gpuFeed.CompareAndSwap(r, nil)
	}
	gpuMu.Unlock()
	if !last {
		return nil
	}
	r.unsub()
	r.sampler.Stop()
	if gpuFeed.Load() == nil {
		hub.clearGPU()
	}
	return r.src.Close()
}

// nvmlActive reports whether an NVML sampler feeds the hub, in which case a dcgm-exporter
// scrape's GPU samples are ignored rather than counted twice.
func nvmlActive() bool {
	r := gpuFeed.Load()
	if r == nil {
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
func LatestGPUSamples(dst []gpu.Sample) []gpu.Sample { return hub.latestGPU(dst) }
