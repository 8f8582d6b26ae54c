package process

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// TestNoNVMLLogsOnce loads the gpu feature three times (three reloads) on a host without
// NVML: GPU sampling stays off without failing the config, and says so in one info line for
// the process, not one per reload. A source that fails for another reason is logged as an
// error, also without failing the config.
func TestNoNVMLLogsOnce(t *testing.T) {
	p := New(Options{OpenGPU: func() (gpu.Source, error) { return nil, fmt.Errorf("%w: no libnvidia-ml", gpu.ErrNoNVML) }})
	defer p.Close(context.Background())
	core, logs := observer.New(zapcore.DebugLevel)
	r := p.newGPURunner(newLiveLogger(zap.New(core)))
	defer r.Close(context.Background())
	for range 3 {
		if err := r.configure(gpu.DefaultInterval); r.run.Active() || err != nil {
			t.Fatalf("configuring the GPU sampler without NVML = %v, %v; want no sampler and no error", r.run.Active(), err)
		}
	}
	if got := logs.FilterMessageSnippet("NVML is not available").All(); len(got) != 1 || got[0].Level != zapcore.InfoLevel {
		t.Errorf("logged %v; want one info line saying NVML is not available", logs.All())
	}

	p.opts.OpenGPU = func() (gpu.Source, error) { return nil, errors.New("permission denied") }
	if err := r.configure(gpu.DefaultInterval); r.run.Active() || err != nil {
		t.Fatalf("configuring the GPU sampler with a failing NVML = %v, %v; want no sampler and no error", r.run.Active(), err)
	}
	if got := logs.FilterLevelExact(zapcore.ErrorLevel).All(); len(got) != 1 {
		t.Errorf("a failing NVML logged %d errors, want 1", len(got))
	}
}
