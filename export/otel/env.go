package otel

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name when neither OTEL_SERVICE_NAME nor
// OTEL_RESOURCE_ATTRIBUTES names the service.
const DefaultServiceName = "llmtap"

// Providers are the OpenTelemetry SDK providers built from the environment. A nil provider
// means that signal is off: nothing is created for it and nothing is exported.
type Providers struct {
	// MeterProvider exports metrics, or is nil when metrics export is off.
	MeterProvider metric.MeterProvider
	// TracerProvider exports spans, or is nil when trace export is off.
	TracerProvider trace.TracerProvider
	// Propagator reads trace context from request headers (OTEL_PROPAGATORS; default W3C
	// trace context and baggage).
	Propagator propagation.TextMapPropagator

	// InstanceID is the resource's service.instance.id: OTEL_RESOURCE_ATTRIBUTES' when it sets
	// one, else this process's (ProcessInstanceID). Empty when no signal is on.
	InstanceID string

	shutdown     []func(context.Context) error
	shutdownOnce sync.Once
	shutdownErr  error
}

// MetricsOffEnv names the variable that turns llmtap's own OTel metrics off ("off") while the
// OTEL_* variables stay in force for the rest of the process. Set it when Caddy's
// `metrics { otlp }` option already pushes llmtap's Prometheus metrics from Caddy's registry:
// the two exports carry the same measurements, and a Collector's Prometheus exporter would
// turn both into the same metric names with different labels.
const MetricsOffEnv = "LLMTAP_OTEL_METRICS"

// MetricsEnabled reports whether the environment asks for metrics export: OTEL_SDK_DISABLED
// is not "true", LLMTAP_OTEL_METRICS is not "off", and OTEL_METRICS_EXPORTER names an exporter
// other than "none", or is unset while an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) is set. Unlike the SDK's own default, an environment
// with no OTEL_* variable exports nothing: llmtap should not send metrics to localhost:4318
// because nobody said otherwise.
func MetricsEnabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv(MetricsOffEnv)), "off") {
		return false
	}
	return signalEnabled(getenv, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
}

// TracesEnabled is MetricsEnabled for spans (OTEL_TRACES_EXPORTER,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func TracesEnabled(getenv func(string) string) bool {
	return signalEnabled(getenv, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

func signalEnabled(getenv func(string) string, exporterKey, endpointKey string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if exp := strings.TrimSpace(getenv(exporterKey)); exp != "" {
		return exp != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv(endpointKey) != ""
}

// FromEnv builds the providers the OTEL_* environment asks for, through the contrib autoexport
// package: OTEL_METRICS_EXPORTER and OTEL_TRACES_EXPORTER (otlp, console, prometheus, none),
// OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf, also per signal),
// OTEL_EXPORTER_OTLP_ENDPOINT (also per signal), OTEL_EXPORTER_OTLP_HEADERS, the export
// interval OTEL_METRIC_EXPORT_INTERVAL, temporality and histogram aggregation preferences,
// OTEL_TRACES_SAMPLER, and the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; service
// name "llmtap" and service.instance.id ProcessInstanceID() otherwise). A signal the environment does not enable (see MetricsEnabled) gets
// a nil provider. The caller owns the result and calls Shutdown, which flushes what is pending.
func FromEnv(ctx context.Context, version string) (*Providers, error) {
	p := &Providers{Propagator: autoprop.NewTextMapPropagator()}
	metricsOn, tracesOn := MetricsEnabled(os.Getenv), TracesEnabled(os.Getenv)
	if !metricsOn && !tracesOn {
		return p, nil
	}
	res, err := newResource(ctx, version)
	if err != nil {
		return nil, err
	}
	if v, ok := res.Set().Value(attrServiceInstanceID); ok {
		p.InstanceID = v.AsString()
	}
	if metricsOn {
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("configuring the OpenTelemetry metric exporter from OTEL_* variables: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		p.MeterProvider = mp
		p.shutdown = append(p.shutdown, mp.Shutdown)
	}
	if tracesOn {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("configuring the OpenTelemetry span exporter from OTEL_* variables: %w", err),
				p.Shutdown(ctx))
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider = tp
		p.shutdown = append(p.shutdown, tp.Shutdown)
	}
	return p, nil
}

// attrServiceInstanceID is the resource attribute that tells instances of one service apart.
const attrServiceInstanceID = "service.instance.id"

// ProcessInstanceID is this process's default service.instance.id: a random (version 4) UUID,
// drawn once per process and kept for its lifetime, across config reloads, as the OpenTelemetry
// semantic conventions recommend for an instance with no stable identity of its own (the Go
// SDK's resource.WithService draws the same kind). Without it, N instances of one service.name
// would export the same series and overwrite each other's points in any backend.
var ProcessInstanceID = sync.OnceValue(func() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // crypto/rand.Read never returns an error (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
})

// newResource is service.name=llmtap, service.instance.id=ProcessInstanceID() and
// service.version, overridden by OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, plus the SDK's
// telemetry.sdk.* attributes.
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	base := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName),
		attribute.String(attrServiceInstanceID, ProcessInstanceID())}
	if version != "" {
		base = append(base, attribute.String("service.version", version))
	}
	fromEnv, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && fromEnv == nil {
		return nil, fmt.Errorf("reading OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(base...), fromEnv)
	if err != nil {
		return nil, fmt.Errorf("building the OpenTelemetry resource: %w", err)
	}
	return res, nil
}

// Shutdown flushes and stops the providers. It is safe to call more than once; later calls
// return the first call's error.
func (p *Providers) Shutdown(ctx context.Context) error {
	p.shutdownOnce.Do(func() {
		var errs []error
		for _, f := range p.shutdown {
			errs = append(errs, f(ctx))
		}
		p.shutdownErr = errors.Join(errs...)
	})
	return p.shutdownErr
}
