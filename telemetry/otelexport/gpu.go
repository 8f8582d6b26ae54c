package otelexport

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// GPU instrument names: the OpenTelemetry hardware conventions (docs/hardware/gpu.md and
// common.md) where one exists, llmtap's own names for readings the conventions do not cover.
const (
	MetricGPUUtilization       = "hw.gpu.utilization"
	MetricGPUMemoryUtilization = "hw.gpu.memory.utilization"
	MetricGPUMemoryUsage       = "hw.gpu.memory.usage"
	MetricGPUMemoryLimit       = "hw.gpu.memory.limit"
	MetricPower                = "hw.power"
	MetricEnergy               = "hw.energy"
	MetricTemperature          = "hw.temperature"
	MetricGPUMemoryBusy        = "llmtap.gpu.memory.busy"
	MetricGPUClockSM           = "llmtap.gpu.clock.sm"
	MetricGPUClockMemory       = "llmtap.gpu.clock.memory"
)

// gpuInstruments are the observable instruments fed by one callback.
type gpuInstruments struct {
	samples func(dst []gpu.Sample) []gpu.Sample

	util, memUtil, memBusy, power, temp metric.Float64ObservableGauge
	memUsage, memLimit                  metric.Int64ObservableUpDownCounter
	energy                              metric.Float64ObservableCounter
	smClock, memClock                   metric.Int64ObservableGauge

	mu  sync.Mutex // collections may overlap when several readers collect
	buf []gpu.Sample
}

// registerGPU creates the hw.* instruments on meter and registers one callback that reads
// samples once per collection. Every observation carries hw.id (the GPU's UUID), hw.name and
// hw.type=gpu; a reading the GPU did not report (its Valid bit clear) is left out rather than
// exported as zero.
func registerGPU(meter metric.Meter, samples func(dst []gpu.Sample) []gpu.Sample) (metric.Registration, error) {
	g := &gpuInstruments{samples: samples}
	var errs []error
	fgauge := func(name, unit, desc string) metric.Float64ObservableGauge {
		i, err := meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	igauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		i, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	updown := func(name, desc string) metric.Int64ObservableUpDownCounter {
		i, err := meter.Int64ObservableUpDownCounter(name, metric.WithUnit("By"), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	g.util = fgauge(MetricGPUUtilization, "1", "Fraction of the last sample period during which a kernel was running (NVML GPU utilization).")
	g.memUtil = fgauge(MetricGPUMemoryUtilization, "1", "Fraction of GPU memory used (used / total).")
	g.memBusy = fgauge(MetricGPUMemoryBusy, "1", "Fraction of the last sample period during which device memory was read or written (NVML memory utilization).")
	g.power = fgauge(MetricPower, "W", "Board power draw.")
	g.temp = fgauge(MetricTemperature, "Cel", "GPU die temperature.")
	g.memUsage = updown(MetricGPUMemoryUsage, "GPU memory used, including driver-reserved memory.")
	g.memLimit = updown(MetricGPUMemoryLimit, "GPU memory size.")
	g.smClock = igauge(MetricGPUClockSM, "MHz", "Current SM clock.")
	g.memClock = igauge(MetricGPUClockMemory, "MHz", "Current memory clock.")
	energy, err := meter.Float64ObservableCounter(MetricEnergy, metric.WithUnit("J"),
		metric.WithDescription("Energy used since the driver was loaded (NVML total energy counter)."))
	errs = append(errs, err)
	g.energy = energy
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(g.observe, g.util, g.memUtil, g.memBusy, g.power, g.temp,
		g.memUsage, g.memLimit, g.smClock, g.memClock, g.energy)
}

func (g *gpuInstruments) observe(_ context.Context, o metric.Observer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buf = g.samples(g.buf[:0])
	for i := range g.buf {
		s := &g.buf[i]
		attrs := metric.WithAttributeSet(attribute.NewSet(
			attribute.String("hw.id", s.UUID),
			attribute.String("hw.name", s.Name),
			attribute.String("hw.type", "gpu"),
			attribute.String("hw.vendor", "NVIDIA"),
		))
		if s.Has(gpu.FieldUtil) {
			o.ObserveFloat64(g.util, float64(s.GPUUtil)/100, attrs,
				metric.WithAttributes(attribute.String("hw.gpu.task", "general")))
			o.ObserveFloat64(g.memBusy, float64(s.MemUtil)/100, attrs)
		}
		if s.Has(gpu.FieldMemory) {
			o.ObserveInt64(g.memUsage, int64(s.MemUsed), attrs)
			o.ObserveInt64(g.memLimit, int64(s.MemTotal), attrs)
			if s.MemTotal > 0 {
				o.ObserveFloat64(g.memUtil, float64(s.MemUsed)/float64(s.MemTotal), attrs)
			}
		}
		if s.Has(gpu.FieldPower) {
			o.ObserveFloat64(g.power, float64(s.PowerMW)/1000, attrs)
		}
		if s.Has(gpu.FieldEnergy) {
			o.ObserveFloat64(g.energy, float64(s.EnergyMJ)/1000, attrs)
		}
		if s.Has(gpu.FieldTemp) {
			o.ObserveFloat64(g.temp, float64(s.TempC), attrs)
		}
		if s.Has(gpu.FieldSMClock) {
			o.ObserveInt64(g.smClock, int64(s.SMClockMHz), attrs)
		}
		if s.Has(gpu.FieldMemClock) {
			o.ObserveInt64(g.memClock, int64(s.MemClockMHz), attrs)
		}
	}
	return nil
}
