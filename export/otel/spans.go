package otel

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Tracer opens one span per request. The span is created when the request arrives and is
// given its name, attributes, first_token event and status only when the finished record
// reaches EndSpan, with explicit timestamps: tracing costs one span start per request and
// nothing per streamed event.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// NewTracer returns a Tracer on tp. prop extracts a parent from the request headers when the
// request context carries no span (nil: W3C trace context).
func NewTracer(tp trace.TracerProvider, prop propagation.TextMapPropagator) *Tracer {
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), prop: prop}
}

// Start opens the span of a request that arrived at t0. Its parent is the span in ctx (Caddy's
// tracing handler puts its span there) or, failing that, the one named by the request's
// propagation headers. The name is provisional until EndSpan renames it
// "{gen_ai.operation.name} {model}".
func (t *Tracer) Start(ctx context.Context, h http.Header, t0 time.Time) trace.Span {
	if !trace.SpanContextFromContext(ctx).IsValid() && h != nil {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	}
	_, span := t.tracer.Start(ctx, defaultOperation, trace.WithTimestamp(t0), trace.WithSpanKind(trace.SpanKindClient))
	return span
}

// EndSpan completes and ends span, the span of the request r records, if any; it runs in a
// pipeline sink, off the request path. The span gets the GenAI attributes of the record (models,
// token usage, finish reason, stream flag, time to first chunk), a first_token event at the
// instant the first content arrived, an error status carrying error.type for a failed request,
// and ends at the moment the response was complete.
func EndSpan(r *record.Record, span trace.Span) {
	if span == nil {
		return
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	op := Operation(r.API)
	model, reqModel := r.Model, requestModel(r)
	if reqModel == "" {
		span.SetName(op)
	} else {
		span.SetName(op + " " + reqModel) // the conventions name the span by the request's model
	}
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		attribute.String(attrOperation, op),
		attribute.String(attrProvider, Provider(r.API)),
		attribute.String(attrClass, r.Class),
		attribute.String(attrRequestID, r.RequestID),
		attribute.String(attrAPI, r.API),
		attribute.Bool(attrRequestStream, r.Stream),
	)
	if reqModel != "" {
		attrs = append(attrs, attribute.String(attrRequestModel, reqModel))
	}
	if model != "" {
		attrs = append(attrs, attribute.String(attrResponseModel, model))
	}
	if r.Status > 0 {
		attrs = append(attrs, attribute.Int(attrHTTPStatus, r.Status))
	}
	if r.Finish != "" {
		attrs = append(attrs, attribute.StringSlice(attrFinishReasons, []string{r.Finish}))
	}
	if r.InputTokensSource != record.SourceNone {
		attrs = append(attrs, attribute.Int64(attrUsageInput, r.InputTokens))
	}
	if r.OutputTokensSource != record.SourceNone {
		attrs = append(attrs, attribute.Int64(attrUsageOutput, r.OutputTokens),
			attribute.String(attrTokenSource, r.OutputTokensSource))
	}
	if r.ReasoningTokens > 0 {
		attrs = append(attrs, attribute.Int64(attrUsageReasoning, r.ReasoningTokens))
	}
	if r.CachedTokens > 0 {
		attrs = append(attrs, attribute.Int64(attrUsageCacheRead, r.CachedTokens))
	}
	if r.CacheWriteTokens > 0 {
		attrs = append(attrs, attribute.Int64(attrUsageCacheWrite, r.CacheWriteTokens))
	}
	if r.Tenant != "" {
		attrs = append(attrs, attribute.String(attrTenant, r.Tenant))
	}
	if r.TTFTMs != nil {
		attrs = append(attrs, attribute.Float64(attrResponseTTFC, *r.TTFTMs/1000))
		span.AddEvent(eventFirstToken, trace.WithTimestamp(r.Start.Add(msDuration(*r.TTFTMs))))
	}
	if !r.OK() {
		attrs = append(attrs, attribute.String(attrErrorType, r.Error))
		span.SetStatus(codes.Error, r.ErrorMsg)
	}
	span.SetAttributes(attrs...)
	span.End(trace.WithTimestamp(r.Start.Add(msDuration(r.DurationMs))))
}

// SetServer records the upstream that served the request on its span (as server.address and
// server.port): the proxy knows it only once the request went through, and the record does
// not keep it. A port that is not a number is left out.
func SetServer(s trace.Span, host, port string) {
	if s == nil || host == "" || !s.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(attrServerAddress, host)}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attribute.Int(attrServerPort, p))
	}
	s.SetAttributes(attrs...)
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
