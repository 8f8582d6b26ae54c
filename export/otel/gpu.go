package otel

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

// GPUKind is the instrument kind of a GPU reading.
type GPUKind int

// The kinds the hardware conventions use.
const (
	GPUGauge         GPUKind = iota // a value read now (power, utilization, temperature)
	GPUCounter                      // a monotonic total (energy)
	GPUUpDownCounter                // an amount that goes up and down (memory in use)
)

// GPUReading is one hw.* value read from a gpu.Sample, with what an exporter needs to name it.
// The OTel instruments here and llmtap's Prometheus collector both iterate GPUReadings, so the
// two expositions carry the same values under translated names.
type GPUReading struct {
	Name, Unit, Description string
	Kind                    GPUKind
	// Attrs are attributes of this reading beyond the GPU's own (hw.gpu.task for utilization).
	Attrs []attribute.KeyValue
	// Value converts the sample's NVML units to the reading's; ok is false when the GPU did not
	// report it (its Valid bit is clear), and the reading is then left out, not exported as 0.
	Value func(s *gpu.Sample) (v float64, ok bool)
}

// GPUReadings are the readings exported per GPU.
var GPUReadings = []GPUReading{
	{MetricGPUUtilization, "1", "Fraction of the last sample period during which a kernel was running (NVML GPU utilization).",
		GPUGauge, []attribute.KeyValue{attribute.String("hw.gpu.task", "general")},
		func(s *gpu.Sample) (float64, bool) { return float64(s.GPUUtil) / 100, s.Has(gpu.FieldUtil) }},
	{MetricGPUMemoryUtilization, "1", "Fraction of GPU memory used (used / total).", GPUGauge, nil,
		func(s *gpu.Sample) (float64, bool) {
			return float64(s.MemUsed) / float64(s.MemTotal), s.Has(gpu.FieldMemory) && s.MemTotal > 0
		}},
	{MetricGPUMemoryUsage, "By", "GPU memory used, including driver-reserved memory.", GPUUpDownCounter, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.MemUsed), s.Has(gpu.FieldMemory) }},
	{MetricGPUMemoryLimit, "By", "GPU memory size.", GPUUpDownCounter, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.MemTotal), s.Has(gpu.FieldMemory) }},
	{MetricPower, "W", "Board power draw.", GPUGauge, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.PowerMW) / 1000, s.Has(gpu.FieldPower) }},
	{MetricEnergy, "J", "Energy used since the driver was loaded (NVML total energy counter).", GPUCounter, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.EnergyMJ) / 1000, s.Has(gpu.FieldEnergy) }},
	{MetricTemperature, "Cel", "GPU die temperature.", GPUGauge, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.TempC), s.Has(gpu.FieldTemp) }},
	{MetricGPUMemoryBusy, "1", "Fraction of the last sample period during which device memory was read or written (NVML memory utilization).",
		GPUGauge, nil, func(s *gpu.Sample) (float64, bool) { return float64(s.MemUtil) / 100, s.Has(gpu.FieldUtil) }},
	{MetricGPUClockSM, "MHz", "Current SM clock.", GPUGauge, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.SMClockMHz), s.Has(gpu.FieldSMClock) }},
	{MetricGPUClockMemory, "MHz", "Current memory clock.", GPUGauge, nil,
		func(s *gpu.Sample) (float64, bool) { return float64(s.MemClockMHz), s.Has(gpu.FieldMemClock) }},
}

// GPUAttrs are the attributes identifying one GPU: hw.id (its UUID), hw.name, hw.type=gpu and
// hw.vendor.
func GPUAttrs(s *gpu.Sample) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("hw.id", s.UUID),
		attribute.String("hw.name", s.Name),
		attribute.String("hw.type", "gpu"),
		attribute.String("hw.vendor", "NVIDIA"),
	}
}

// gpuInstruments are the observable instruments of GPUReadings, fed by one callback.
type gpuInstruments struct {
	samples func(dst []gpu.Sample) []gpu.Sample
	insts   []metric.Float64Observable // in GPUReadings order
	extra   []metric.MeasurementOption // per reading: its Attrs, or nil

	mu  sync.Mutex // collections may overlap when several readers collect
	buf []gpu.Sample
}

// registerGPU creates the instruments of GPUReadings on meter and registers one callback that
// reads samples once per collection.
func registerGPU(meter metric.Meter, samples func(dst []gpu.Sample) []gpu.Sample) (metric.Registration, error) {
	g := &gpuInstruments{samples: samples}
	var errs []error
	for _, r := range GPUReadings {
		var inst metric.Float64Observable
		var err error
		unit, desc := metric.WithUnit(r.Unit), metric.WithDescription(r.Description)
		switch r.Kind {
		case GPUCounter:
			inst, err = meter.Float64ObservableCounter(r.Name, unit, desc)
		case GPUUpDownCounter:
			inst, err = meter.Float64ObservableUpDownCounter(r.Name, unit, desc)
		default:
			inst, err = meter.Float64ObservableGauge(r.Name, unit, desc)
		}
		errs = append(errs, err)
		g.insts = append(g.insts, inst)
		var extra metric.MeasurementOption
		if len(r.Attrs) > 0 {
			extra = metric.WithAttributes(r.Attrs...)
		}
		g.extra = append(g.extra, extra)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	obs := make([]metric.Observable, len(g.insts))
	for i, inst := range g.insts {
		obs[i] = inst
	}
	return meter.RegisterCallback(g.observe, obs...)
}

func (g *gpuInstruments) observe(_ context.Context, o metric.Observer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buf = g.samples(g.buf[:0])
	for i := range g.buf {
		s := &g.buf[i]
		attrs := metric.WithAttributeSet(attribute.NewSet(GPUAttrs(s)...))
		for j, r := range GPUReadings {
			v, ok := r.Value(s)
			if !ok {
				continue
			}
			if g.extra[j] != nil {
				o.ObserveFloat64(g.insts[j], v, attrs, g.extra[j])
			} else {
				o.ObserveFloat64(g.insts[j], v, attrs)
			}
		}
	}
	return nil
}
