package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// GPU serves the GPU readings of the OpenTelemetry export (otel.GPUReadings: hw.power,
// hw.energy, hw.gpu.*, …) to Prometheus, named as the OTel-to-Prometheus
// translation names them (hw_power_watts, hw_energy_joules_total, hw_gpu_utilization_ratio, …,
// labels hw_id, hw_name, hw_type, hw_vendor), from the latest poll of the GPU sampler. Without
// a GPU source it exports nothing.
type GPU struct {
	samples func() []gpu.Sample
	descs   []*prometheus.Desc // in GPUReadings order
	types   []prometheus.ValueType
}

// NewGPU returns the collector of the samples the function returns at scrape time (the latest
// poll of every GPU; nil or none: no series).
func NewGPU(samples func() []gpu.Sample) *GPU {
	names := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	labels := otlptranslator.LabelNamer{}
	promLabel := func(key string) string {
		l, err := labels.Build(key)
		if err != nil {
			panic(err) // the keys are constants of export/otel; a test loads them
		}
		return l
	}
	c := &GPU{samples: samples}
	var base []string
	for _, kv := range otel.GPUAttrs(&gpu.Sample{}) {
		base = append(base, promLabel(string(kv.Key)))
	}
	for _, r := range otel.GPUReadings {
		typ, vt := otlptranslator.MetricType(otlptranslator.MetricTypeGauge), prometheus.GaugeValue
		switch r.Kind {
		case otel.GPUCounter:
			typ, vt = otlptranslator.MetricTypeMonotonicCounter, prometheus.CounterValue
		case otel.GPUUpDownCounter:
			typ = otlptranslator.MetricTypeNonMonotonicCounter
		}
		name, err := names.Build(otlptranslator.Metric{Name: r.Name, Unit: r.Unit, Type: typ})
		if err != nil {
			panic(err)
		}
		constLabels := prometheus.Labels{}
		for _, kv := range r.Attrs {
			constLabels[promLabel(string(kv.Key))] = kv.Value.String()
		}
		c.descs = append(c.descs, prometheus.NewDesc(name, r.Description, base, constLabels))
		c.types = append(c.types, vt)
	}
	return c
}

// Describe sends the descriptors of every GPU reading.
func (c *GPU) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the readings of the latest poll of every GPU.
func (c *GPU) Collect(ch chan<- prometheus.Metric) {
	if c.samples == nil {
		return
	}
	samples := c.samples()
	for i := range samples {
		s := &samples[i]
		attrs := otel.GPUAttrs(s)
		values := make([]string, len(attrs))
		for j, kv := range attrs {
			values[j] = kv.Value.String()
		}
		for j, r := range otel.GPUReadings {
			if v, ok := r.Value(s); ok {
				ch <- prometheus.MustNewConstMetric(c.descs[j], c.types[j], v, values...)
			}
		}
	}
}

var _ prometheus.Collector = (*GPU)(nil)
