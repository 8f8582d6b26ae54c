package otel

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

func f(v float64) *float64 { return &v }

// streamRecord is a successful streamed chat completion: 50 ms TTFT, 4 tokens, 3 gaps.
func streamRecord(t0 time.Time) *record.Record {
	return &record.Record{
		RequestID: "r1", Class: record.ClassLive, Model: "m1", API: "openai.chat", Stream: true,
		Status: 200, Finish: "stop", Start: t0,
		TTFTMs: f(50), RequestLatencyMs: f(80), ITLMs: f(10), InterChunkMs: []float64{10, 10, 10},
		DurationMs: 81, InputTokens: 12, InputTokensSource: record.SourceUsage,
		OutputTokens: 4, OutputTokensSource: record.SourceUsage,
	}
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func TestMetricsGenAI(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := NewMetrics(mp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	m.Consume(streamRecord(t0))
	m.Consume(streamRecord(t0))
	failed := &record.Record{Class: record.ClassShadow, Model: "m1", API: "openai.chat", Status: 502,
		Error: record.ErrHTTP, Start: t0, DurationMs: 5}
	m.Consume(failed)

	got := collect(t, reader)
	want := []struct {
		name, unit string
		buckets    []float64
		count      uint64 // over all data points
		reason     string
	}{
		{MetricClientOperationDuration, "s", DurationBuckets, 3, "every request, failed ones too"},
		{MetricServerRequestDuration, "s", DurationBuckets, 3, "successes and the failure under error.type"},
		{MetricServerTimeToFirstToken, "s", TTFTBuckets, 2, "successful streams only"},
		{MetricServerTimePerOutputToken, "s", TPOTBuckets, 2, "successful streams with ITL"},
		{MetricClientTimeToFirstChunk, "s", DurationBuckets, 2, "same instant as TTFT, client bucket set"},
		{MetricClientTimePerOutputChunk, "s", DurationBuckets, 6, "one per gap: 3 gaps × 2 streams"},
	}
	for _, w := range want {
		md, ok := got[w.name]
		if !ok {
			t.Errorf("%s: not exported (%s)", w.name, w.reason)
			continue
		}
		if md.Unit != w.unit {
			t.Errorf("%s: unit %q, want %q", w.name, md.Unit, w.unit)
		}
		h, ok := md.Data.(metricdata.Histogram[float64])
		if !ok {
			t.Errorf("%s: data %T, want a float64 histogram", w.name, md.Data)
			continue
		}
		var n uint64
		for _, dp := range h.DataPoints {
			n += dp.Count
			if !slices.Equal(dp.Bounds, w.buckets) {
				t.Errorf("%s: bounds %v, want %v", w.name, dp.Bounds, w.buckets)
			}
			for _, k := range []attribute.Key{attrOperation, attrProvider, attrRequestModel, attrResponseModel, attrClass} {
				if _, ok := dp.Attributes.Value(k); !ok {
					t.Errorf("%s: data point lacks %s: %v", w.name, k, dp.Attributes)
				}
			}
			if v, ok := dp.Attributes.Value(attrClass); ok && v.AsString() == record.ClassShadow {
				if e, _ := dp.Attributes.Value(attrErrorType); e.AsString() != record.ErrHTTP {
					t.Errorf("%s: failed request without error.type=%s: %v", w.name, record.ErrHTTP, dp.Attributes)
				}
			}
		}
		if n != w.count {
			t.Errorf("%s: %d measurements, want %d (%s)", w.name, n, w.count, w.reason)
		}
	}
	ttft := got[MetricServerTimeToFirstToken].Data.(metricdata.Histogram[float64]).DataPoints[0]
	if ttft.Sum != 0.1 {
		t.Errorf("TTFT sum %v s, want 0.1 (2 × 50 ms)", ttft.Sum)
	}

	tok, ok := got[MetricClientTokenUsage]
	if !ok {
		t.Fatalf("%s not exported", MetricClientTokenUsage)
	}
	if tok.Unit != "{token}" {
		t.Errorf("token usage unit %q", tok.Unit)
	}
	sums := map[string]int64{}
	for _, dp := range tok.Data.(metricdata.Histogram[int64]).DataPoints {
		if !slices.Equal(dp.Bounds, TokenBuckets) {
			t.Errorf("token bounds %v", dp.Bounds)
		}
		tt, _ := dp.Attributes.Value(attrTokenType)
		sums[tt.AsString()] += dp.Sum
	}
	if sums["input"] != 24 || sums["output"] != 8 {
		t.Errorf("token sums by type %v, want input 24, output 8", sums)
	}
}

func TestOperationAndProvider(t *testing.T) {
	for _, c := range []struct{ api, op, provider, reason string }{
		{"openai.chat", "chat", "openai", "chat completions"},
		{"anthropic.messages", "chat", "anthropic", "messages API is chat"},
		{"openai.completions", "text_completion", "openai", "legacy completions"},
		{"tgi.generate", "text_completion", "tgi", "TGI generate"},
		{"openai.embeddings", "embeddings", "openai", "embeddings"},
		{"unknown", "chat", "_OTHER", "undecoded traffic"},
		{"", "chat", "_OTHER", "no response at all"},
	} {
		if op, p := Operation(c.api), Provider(c.api); op != c.op || p != c.provider {
			t.Errorf("%q (%s): got %s/%s, want %s/%s", c.api, c.reason, op, p, c.op, c.provider)
		}
	}
}

func TestGPUInstruments(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	samples := []gpu.Sample{
		{UUID: "GPU-a", Name: "NVIDIA H200", PowerMW: 350500, EnergyMJ: 1234567, GPUUtil: 87, MemUtil: 40,
			MemUsed: 1 << 30, MemTotal: 4 << 30, TempC: 61, SMClockMHz: 1980, MemClockMHz: 2619, Valid: gpu.FieldAll},
		// A GPU that reports power only: nothing else may be exported for it as zero.
		{UUID: "GPU-b", Name: "old", PowerMW: 1000, Valid: gpu.FieldPower},
	}
	m, err := NewMetrics(mp, Options{GPU: func(dst []gpu.Sample) []gpu.Sample { return append(dst, samples...) }})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	value := func(name, id string) (float64, bool) {
		md, ok := got[name]
		if !ok {
			t.Fatalf("%s not exported", name)
		}
		switch d := md.Data.(type) {
		case metricdata.Gauge[float64]:
			for _, dp := range d.DataPoints {
				if v, _ := dp.Attributes.Value("hw.id"); v.AsString() == id {
					return dp.Value, true
				}
			}
		case metricdata.Gauge[int64]:
			for _, dp := range d.DataPoints {
				if v, _ := dp.Attributes.Value("hw.id"); v.AsString() == id {
					return float64(dp.Value), true
				}
			}
		case metricdata.Sum[float64]:
			for _, dp := range d.DataPoints {
				if v, _ := dp.Attributes.Value("hw.id"); v.AsString() == id {
					return dp.Value, true
				}
			}
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				if v, _ := dp.Attributes.Value("hw.id"); v.AsString() == id {
					return float64(dp.Value), true
				}
			}
		default:
			t.Fatalf("%s: unexpected data %T", name, md.Data)
		}
		return 0, false
	}
	for _, c := range []struct {
		name, unit string
		want       float64
	}{
		{MetricPower, "W", 350.5},
		{MetricEnergy, "J", 1234.567},
		{MetricGPUUtilization, "1", 0.87},
		{MetricGPUMemoryUtilization, "1", 0.25},
		{MetricGPUMemoryUsage, "By", 1 << 30},
		{MetricGPUMemoryLimit, "By", 4 << 30},
		{MetricTemperature, "Cel", 61},
		{MetricGPUClockSM, "MHz", 1980},
	} {
		v, ok := value(c.name, "GPU-a")
		if !ok || v != c.want {
			t.Errorf("%s for GPU-a = %v (present %v), want %v", c.name, v, ok, c.want)
		}
		if u := got[c.name].Unit; u != c.unit {
			t.Errorf("%s unit %q, want %q", c.name, u, c.unit)
		}
	}
	if _, ok := value(MetricGPUUtilization, "GPU-b"); ok {
		t.Error("GPU-b reported no utilization, yet hw.gpu.utilization was exported for it")
	}
	if v, ok := value(MetricPower, "GPU-b"); !ok || v != 1 {
		t.Errorf("GPU-b power %v (present %v), want 1 W", v, ok)
	}
	if en := got[MetricEnergy].Data.(metricdata.Sum[float64]); !en.IsMonotonic {
		t.Error("hw.energy must be a monotonic counter")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := collect(t, reader)[MetricPower]; ok {
		t.Error("hw.power still observed after Close")
	}
}

func TestSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	tr := NewTracer(tp, nil)

	// A parent in the context (as Caddy's tracing handler leaves it) wins over headers.
	parentCtx, parent := tp.Tracer("caddy").Start(context.Background(), "caddy")
	t0 := time.Now()
	rec := streamRecord(t0)
	span := tr.Start(parentCtx, nil, t0)
	SetServer(span, "10.0.0.7", "8000")
	SetServer(nil, "ignored", "1") // no span: nothing happens
	EndSpan(rec, span)
	parent.End()

	// No span in the context: the traceparent header names the parent.
	h := http.Header{}
	h.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	bad := &record.Record{Class: record.ClassLive, API: "openai.completions", Status: 0, Start: t0,
		Error: record.ErrUpstream, ErrorMsg: "connection refused", DurationMs: 3}
	EndSpan(bad, tr.Start(context.Background(), h, t0))
	EndSpan(&record.Record{}, nil) // no span: nothing happens

	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	var chat, failed sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch s.Name() {
		case "chat m1":
			chat = s
		case "text_completion":
			failed = s
		}
	}
	if chat == nil || failed == nil {
		t.Fatalf("span names %q, %q, %q", spans[0].Name(), spans[1].Name(), spans[2].Name())
	}
	if chat.Parent().SpanID() != parent.SpanContext().SpanID() || chat.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Error("chat span is not a child of the span in the request context")
	}
	if chat.SpanKind() != trace.SpanKindClient {
		t.Errorf("kind %v", chat.SpanKind())
	}
	if !chat.StartTime().Equal(t0) || !chat.EndTime().Equal(t0.Add(81*time.Millisecond)) {
		t.Errorf("span runs %v..%v, want t0..t0+81ms", chat.StartTime().Sub(t0), chat.EndTime().Sub(t0))
	}
	ev := chat.Events()
	if len(ev) != 1 || ev[0].Name != "first_token" || !ev[0].Time.Equal(t0.Add(50*time.Millisecond)) {
		t.Errorf("events %+v, want first_token at t0+50ms", ev)
	}
	attrs := attribute.NewSet(chat.Attributes()...)
	for k, want := range map[attribute.Key]attribute.Value{
		attrOperation:          attribute.StringValue("chat"),
		attrProvider:           attribute.StringValue("openai"),
		attrRequestModel:       attribute.StringValue("m1"),
		attrResponseModel:      attribute.StringValue("m1"),
		attrUsageInput:         attribute.Int64Value(12),
		attrUsageOutput:        attribute.Int64Value(4),
		attrFinishReasons:      attribute.StringSliceValue([]string{"stop"}),
		attrRequestStream:      attribute.BoolValue(true),
		attrResponseTTFC:       attribute.Float64Value(0.05),
		attrClass:              attribute.StringValue("live"),
		attrRequestID:          attribute.StringValue("r1"),
		attrHTTPStatus:         attribute.IntValue(200),
		attrTokenSource:        attribute.StringValue("usage"),
		attrServerAddress:      attribute.StringValue("10.0.0.7"),
		attrServerPort:         attribute.IntValue(8000),
		attribute.Key(attrAPI): attribute.StringValue("openai.chat"),
	} {
		if got, ok := attrs.Value(k); !ok || got != want {
			t.Errorf("chat span %s = %v (present %v), want %v", k, got.String(), ok, want.String())
		}
	}
	if chat.Status().Code != codes.Unset {
		t.Errorf("successful span status %v", chat.Status())
	}
	if failed.Parent().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || failed.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("failed span parent %v, want the traceparent header's", failed.Parent())
	}
	if failed.Status().Code != codes.Error || failed.Status().Description != "connection refused" {
		t.Errorf("failed span status %+v", failed.Status())
	}
	failedAttrs := attribute.NewSet(failed.Attributes()...)
	if v, _ := failedAttrs.Value(attrErrorType); v.AsString() != record.ErrUpstream {
		t.Errorf("failed span error.type %q", v.AsString())
	}
	if len(failed.Events()) != 0 {
		t.Errorf("failed span has events %v but no first token arrived", failed.Events())
	}
}

func TestEnvGating(t *testing.T) {
	for _, c := range []struct {
		env             map[string]string
		metrics, traces bool
		reason          string
	}{
		{nil, false, false, "no OTEL_* variable: nothing exported"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, true, "an endpoint turns both on"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://x"}, true, false, "a metrics endpoint only"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x"}, false, true, "a traces endpoint only"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, true, false, "traces exporter none"},
		{map[string]string{"OTEL_METRICS_EXPORTER": "console"}, true, false, "an exporter named without endpoint"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false, false, "SDK disabled wins"},
		{map[string]string{"OTEL_SERVICE_NAME": "svc"}, false, false, "a resource variable alone enables nothing"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "LLMTAP_OTEL_METRICS": "off"}, false, true, "metrics left to Caddy's metrics { otlp }"},
	} {
		get := func(k string) string { return c.env[k] }
		if m, tr := MetricsEnabled(get), TracesEnabled(get); m != c.metrics || tr != c.traces {
			t.Errorf("%s: metrics %v traces %v, want %v %v", c.reason, m, tr, c.metrics, c.traces)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	p, err := FromEnv(context.Background(), "v0")
	if err != nil {
		t.Fatal(err)
	}
	if p.MeterProvider != nil || p.TracerProvider != nil || p.Propagator == nil {
		t.Errorf("empty environment gave providers %+v", p)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	if _, err := FromEnv(context.Background(), "v0"); err == nil {
		t.Error("an unknown OTEL_EXPORTER_OTLP_PROTOCOL was accepted")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	p, err = FromEnv(context.Background(), "v0")
	if err != nil {
		t.Fatal(err)
	}
	if p.MeterProvider == nil || p.TracerProvider == nil {
		t.Fatal("an endpoint did not turn export on")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.Shutdown(ctx) // the endpoint is closed: the flush may fail, but must return
	_ = p.Shutdown(ctx) // idempotent
}

// BenchmarkMetricsConsume is the cost per record of the OTel metrics sink (on the record
// pipeline's worker, off the request path): a successful stream with 3 inter-chunk gaps.
func BenchmarkMetricsConsume(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	m, err := NewMetrics(mp, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := streamRecord(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		m.Consume(r)
	}
}

// BenchmarkSpan is the cost per request of tracing: Start on the request path, EndSpan on the
// pipeline worker, with a sampler that records everything and a processor that drops it.
func BenchmarkSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(dropProcessor{}))
	defer tp.Shutdown(context.Background())
	tr := NewTracer(tp, nil)
	ctx := context.Background()
	t0 := time.Now()
	b.Run("start", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr.Start(ctx, nil, t0)
		}
	})
	b.Run("start+end", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := streamRecord(t0)
			EndSpan(r, tr.Start(ctx, nil, t0))
		}
	})
}

// dropProcessor ends the spans' life without keeping them, so a benchmark measures the span,
// not a growing slice.
type dropProcessor struct{}

func (dropProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropProcessor) Shutdown(context.Context) error                  { return nil }
func (dropProcessor) ForceFlush(context.Context) error                { return nil }

// TestRequestAndResponseModel: a server that answers with a dated model name keeps the
// request's model as gen_ai.request.model and in the span name, and reports its own as
// gen_ai.response.model.
func TestRequestAndResponseModel(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	m, err := NewMetrics(mp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r := streamRecord(t0)
	r.RequestModel, r.Model = "gpt-4o", "gpt-4o-2024-08-06"
	span := NewTracer(tp, nil).Start(context.Background(), nil, t0)
	m.Consume(r)
	EndSpan(r, span)

	dp := collect(t, reader)[MetricServerTimeToFirstToken].Data.(metricdata.Histogram[float64]).DataPoints[0]
	req, _ := dp.Attributes.Value(attrRequestModel)
	resp, _ := dp.Attributes.Value(attrResponseModel)
	if req.AsString() != "gpt-4o" || resp.AsString() != "gpt-4o-2024-08-06" {
		t.Errorf("metric models request %q response %q", req.AsString(), resp.AsString())
	}
	s := sr.Ended()[0]
	set := attribute.NewSet(s.Attributes()...)
	sreq, _ := set.Value(attrRequestModel)
	sresp, _ := set.Value(attrResponseModel)
	if s.Name() != "chat gpt-4o" || sreq.AsString() != "gpt-4o" || sresp.AsString() != "gpt-4o-2024-08-06" {
		t.Errorf("span %q request %q response %q", s.Name(), sreq.AsString(), sresp.AsString())
	}
}

// TestModelsFoldedByTheSharedRule: the export labels models with the Set it is given, the rule
// /metrics and the summary use: a model the Set already gave its place keeps it, later ones are
// _other, and a long name is shortened with its hash.
func TestModelsFoldedByTheSharedRule(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	models := labelcap.New(2)
	long := strings.Repeat("L", 50<<10)
	models.Label(long) // another consumer saw it first
	m, err := NewMetrics(mp, Options{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{long, "b", "c", "d"} {
		r := streamRecord(time.Now())
		r.Model, r.RequestModel = name, name
		m.Consume(r)
	}
	got := map[string]uint64{}
	for _, dp := range collect(t, reader)[MetricServerTimeToFirstToken].Data.(metricdata.Histogram[float64]).DataPoints {
		v, _ := dp.Attributes.Value(attrResponseModel)
		got[v.AsString()] += dp.Count
	}
	want := map[string]uint64{labelcap.Shorten(long): 1, "b": 1, labelcap.Other: 2}
	if !maps.Equal(got, want) {
		t.Errorf("TTFT points by model %v, want %v", got, want)
	}
}

// TestResourceInstanceID checks the default service.instance.id: a version 4 UUID, the same for
// every provider of the process (metrics and spans, every engine start), and replaced by the one
// OTEL_RESOURCE_ATTRIBUTES names. Without the default, instances of one service collide.
func TestResourceInstanceID(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	idOf := func() string {
		t.Helper()
		p, err := FromEnv(context.Background(), "v0")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Shutdown(context.Background())
		res, err := newResource(context.Background(), "v0")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := res.Set().Value(attrServiceInstanceID)
		if v.AsString() != p.InstanceID {
			t.Errorf("Providers.InstanceID %q, resource's %q", p.InstanceID, v.AsString())
		}
		return p.InstanceID
	}
	id := idOf()
	if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || strings.Count(id, "-") != 4 {
		t.Errorf("default service.instance.id %q is not a version 4 UUID", id)
	}
	if again := idOf(); again != id || ProcessInstanceID() != id {
		t.Errorf("service.instance.id changed within the process: %q, then %q", id, again)
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=pod-7,deployment.environment.name=e2e")
	if got := idOf(); got != "pod-7" {
		t.Errorf("service.instance.id %q, want OTEL_RESOURCE_ATTRIBUTES' pod-7", got)
	}
}

// TestCostByBasis: a record's GPU-hour cost and list cost are counted apart in llmtap.cost,
// under llmtap.cost.basis gpu_hour and list_price, never added together.
func TestCostByBasis(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := NewMetrics(mp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := streamRecord(time.Now())
		r.GPU = &record.GPUUsage{GPUSeconds: 0.5}
		r.Cost = record.NewCost(0.25, record.BasisGPUHour, 16)
		r.ListCost = record.NewCost(0.125, record.BasisListPrice, 16)
		m.Consume(r)
	}
	listOnly := streamRecord(time.Now())
	listOnly.ListCost = record.NewCost(1, record.BasisListPrice, 16)
	m.Consume(listOnly)
	sums := map[string]float64{}
	for _, dp := range collect(t, reader)[MetricCost].Data.(metricdata.Sum[float64]).DataPoints {
		b, _ := dp.Attributes.Value(attrBasis)
		sums[b.AsString()] += dp.Value
	}
	if len(sums) != 2 || sums[record.BasisGPUHour] != 0.5 || sums[record.BasisListPrice] != 1.25 {
		t.Errorf("llmtap.cost by basis %v, want gpu_hour 0.5 and list_price 1.25", sums)
	}
}
