package llmtap

import (
	"context"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/otelexport"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// OpenTelemetry export lives with the measurement engine: it is configured once, from the
// standard OTEL_* environment, when the engine starts, and flushed and stopped when the engine
// stops. Without OTEL_* variables nothing is created and the request path pays one nil check.

// SetGPUSamples makes fn the source of the OpenTelemetry GPU instruments (hw.power,
// hw.energy, hw.gpu.*) instead of the llmtap app's GPU sampler: fn appends the latest sample
// of every GPU to dst. Nil restores the sampler. It is read at each metric collection, so it
// may be set before or after the engine starts; tests use it to export a GPU they do not have.
func SetGPUSamples(fn func(dst []gpu.Sample) []gpu.Sample) {
	if fn == nil {
		proc.gpuSamples.Store(nil)
		return
	}
	proc.gpuSamples.Store(&fn)
}

func latestGPUSamples(dst []gpu.Sample) []gpu.Sample {
	if fn := proc.gpuSamples.Load(); fn != nil {
		return (*fn)(dst)
	}
	return LatestGPUSamples(dst)
}

// otelExport is the engine's OpenTelemetry state; a nil *otelExport means export is off.
type otelExport struct {
	providers *otelexport.Providers
	metrics   *otelexport.Metrics
	tracer    *otelexport.Tracer // nil when trace export is off
}

// startOTel builds the providers the environment asks for and adds their sinks to t. It
// returns nil when the environment enables no signal, and logs (rather than fails) when the
// environment is invalid, so that a bad OTEL_* variable never takes the proxy down. It logs
// through the process's logger: the export outlives the config that started it.
func startOTel(t *tap.Tap) *otelExport {
	log := logger("otel")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := otelexport.FromEnv(ctx, "")
	if err != nil {
		log.Error("OpenTelemetry export is off", zap.Error(err))
		return nil
	}
	if p.MeterProvider == nil && p.TracerProvider == nil {
		return nil
	}
	o := &otelExport{providers: p}
	if p.MeterProvider != nil {
		m, err := otelexport.NewMetrics(p.MeterProvider, otelexport.Options{
			Models:      modelLabels,
			Tenants:     tenantLabels,
			LatestGenAI: otelexport.LatestGenAI(nil), // OTEL_SEMCONV_STABILITY_OPT_IN
			GPU:         latestGPUSamples,
		})
		if err != nil {
			log.Error("OpenTelemetry metrics are off", zap.Error(err))
		} else {
			o.metrics = m
			t.AddSink(m)
		}
	}
	if p.TracerProvider != nil {
		o.tracer = otelexport.NewTracer(p.TracerProvider, p.Propagator)
		t.AddSink(pipeline.SinkFunc(otelexport.EndSpan))
	}
	log.Info("OpenTelemetry export on", zap.Bool("metrics", o.metrics != nil), zap.Bool("traces", o.tracer != nil),
		zap.String("service.instance.id", p.InstanceID))
	return o
}

// spanUpstream records on span the upstream reverse_proxy sent the request to, read from the
// placeholders it sets ({http.reverse_proxy.upstream.host}, …port); nothing when another
// handler answered.
func spanUpstream(span any, r *http.Request) {
	otelexport.SetServer(span, upstreamOf(r, "http.reverse_proxy.upstream.host"), upstreamOf(r, "http.reverse_proxy.upstream.port"))
}

// upstreamOf is a placeholder reverse_proxy sets about the upstream it sent r to, or "".
func upstreamOf(r *http.Request, key string) string {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		return ""
	}
	v, _ := repl.GetString(key)
	return v
}

// tracerOf returns the tracer of o, nil when o is nil or traces are off.
func (o *otelExport) tracerOf() *otelexport.Tracer {
	if o == nil {
		return nil
	}
	return o.tracer
}

// shutdown flushes what is pending and stops the providers. It runs after the record pipeline
// has drained, so the last records' measurements and spans are exported.
func (o *otelExport) shutdown() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if o.metrics != nil {
		_ = o.metrics.Close()
	}
	if err := o.providers.Shutdown(ctx); err != nil {
		logger("otel").Warn("flushing OpenTelemetry export", zap.Error(err))
	}
}
