package process

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/otelexport"
	"github.com/llmtap/llmtap/telemetry/pipeline"
)

// OpenTelemetry export lives with the measurement engine: it is configured once, from the
// standard OTEL_* environment, when the engine starts, and flushed and stopped when the engine
// stops. Without OTEL_* variables nothing is created and the request path pays one nil check.

// otelExport is the engine's OpenTelemetry state; a nil *otelExport means export is off.
type otelExport struct {
	providers *otelexport.Providers
	metrics   *otelexport.Metrics
	tracer    *otelexport.Tracer // nil when trace export is off
}

// startOTel builds the providers the environment asks for and adds their sinks to the tap. It
// returns nil when the environment enables no signal, and logs (rather than fails) when the
// environment is invalid, so that a bad OTEL_* variable never takes the proxy down.
func (p *Process) startOTel() *otelExport {
	log := p.Log("otel")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prov, err := otelexport.FromEnv(ctx, "")
	if err != nil {
		log.Error("OpenTelemetry export is off", zap.Error(err))
		return nil
	}
	if prov.MeterProvider == nil && prov.TracerProvider == nil {
		return nil
	}
	o := &otelExport{providers: prov}
	if prov.MeterProvider != nil {
		m, err := otelexport.NewMetrics(prov.MeterProvider, otelexport.Options{
			Models:      p.Models,
			Tenants:     p.Tenants,
			LatestGenAI: otelexport.LatestGenAI(nil), // OTEL_SEMCONV_STABILITY_OPT_IN
			GPU:         p.gpuSamples,
		})
		if err != nil {
			log.Error("OpenTelemetry metrics are off", zap.Error(err))
		} else {
			o.metrics = m
			p.tap.AddSink(m)
		}
	}
	if prov.TracerProvider != nil {
		o.tracer = otelexport.NewTracer(prov.TracerProvider, prov.Propagator)
		p.tap.AddSink(pipeline.SinkFunc(otelexport.EndSpan))
	}
	log.Info("OpenTelemetry export on", zap.Bool("metrics", o.metrics != nil), zap.Bool("traces", o.tracer != nil),
		zap.String("service.instance.id", prov.InstanceID))
	return o
}

// Tracer is the tracer of the request spans, nil when trace export is off.
func (p *Process) Tracer() *otelexport.Tracer {
	if p.otel == nil {
		return nil
	}
	return p.otel.tracer
}

// shutdown flushes what is pending and stops the providers, within 5 s. It runs after the
// record pipeline has drained, so the last records' measurements and spans are exported.
func (o *otelExport) shutdown(ctx context.Context, p *Process) {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if o.metrics != nil {
		_ = o.metrics.Close()
	}
	if err := o.providers.Shutdown(ctx); err != nil {
		p.Log("otel").Warn("flushing OpenTelemetry export", zap.Error(err))
	}
}
