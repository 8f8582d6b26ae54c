package llmtap

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// TestPriceWithoutGPUWarns: a price per GPU-hour on a host without NVML and without a dcgm
// scrape warns when the config loads that nothing will be priced (issue 34: it was one info
// line about NVML, and the surfaces read 0 as free); with a dcgm scrape, or without a price,
// it does not.
func TestPriceWithoutGPUWarns(t *testing.T) {
	for _, c := range []struct {
		name   string
		gpu    *GPUConfig
		scrape []ScrapeConfig
		warn   bool
	}{
		{"price, no NVML", &GPUConfig{PricePerGPUHour: 2.5}, nil, true},
		{"price, gpu off", &GPUConfig{PricePerGPUHour: 2.5, Off: true}, nil, true},
		{"price, dcgm scrape", &GPUConfig{PricePerGPUHour: 2.5}, []ScrapeConfig{{URL: "http://127.0.0.1:9400/metrics", Kind: "dcgm"}}, false},
		{"no price", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := process.New(process.Options{OpenGPU: func() (gpu.Source, error) { return nil, fmt.Errorf("%w: no libnvidia-ml", gpu.ErrNoNVML) }})
			defer p.Close(context.Background())
			core, logs := observer.New(zapcore.WarnLevel)
			a := &App{GPU: c.gpu, Scrape: c.scrape, logger: zap.New(core), proc: p}
			release, err := a.startGPU()
			if err != nil {
				t.Fatal(err)
			}
			if release != nil {
				defer release()
			}
			got := logs.FilterMessageSnippet("price_per_gpu_hour is set but no GPU is sampled").Len()
			if (got == 1) != c.warn || got > 1 {
				t.Errorf("%d warnings, want warn=%v: %v", got, c.warn, logs.All())
			}
		})
	}
}
