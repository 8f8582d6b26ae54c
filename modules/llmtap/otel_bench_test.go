package llmtap

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/export/prom"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
)

// benchRecord is the finished record of a successful 128-token streamed chat completion.
func benchRecord(t0 time.Time) *record.Record {
	gaps := make([]float64, 127)
	for i := range gaps {
		gaps[i] = 10
	}
	f := func(v float64) *float64 { return &v }
	return &record.Record{RequestID: "bench", Class: record.ClassLive, Model: "meta-llama/Llama-3.1-8B-Instruct",
		API: "openai.chat", Stream: true, Status: 200, Finish: "length", Start: t0,
		TTFTMs: f(50), RequestLatencyMs: f(1320), ITLMs: f(10), InterChunkMs: gaps, DurationMs: 1321,
		InputTokens: 12, InputTokensSource: record.SourceUsage, OutputTokens: 128, OutputTokensSource: record.SourceUsage}
}

// BenchmarkRecordSinks is the cost per record of each exporting sink on the record pipeline's
// worker goroutine (off the request path), for a 128-token stream: the Prometheus collectors
// (requestMetrics, the anchor), the OTel GenAI metrics (seven histograms, time_per_output_chunk
// taking one measurement per chunk after the first: 127 here), and the span's end from the
// record. "otel-span" includes the span's start, which runs on the request path; the batch
// processor's export is not included (its exporter sends nowhere).
func BenchmarkRecordSinks(b *testing.B) {
	r := benchRecord(time.Now())
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	models := labelcap.New(labelcap.DefaultMax)
	om, err := otel.NewMetrics(mp, otel.Options{Models: models})
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := otel.NewTracer(tp, nil)
	for _, c := range []struct {
		name string
		sink pipeline.SinkFunc
	}{
		{"prometheus", prom.NewRequests(prom.RequestSources{Models: models}).Consume},
		{"otel-metrics", om.Consume},
		{"otel-span", func(r *record.Record) {
			otel.EndSpan(r, tr.Start(context.Background(), nil, r.Start))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.sink(r)
			}
		})
	}
}

// BenchmarkServeHTTPTracing is the request-path cost of tracing: the 128-event stream of
// BenchmarkServeHTTPStream through the handler without and with a tracer (span start on the
// request path; attributes, event and end on the pipeline, included amortized).
func BenchmarkServeHTTPTracing(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, traced := range []bool{false, true} {
		name := "off"
		if traced {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			rig := newBenchRig(b, 128)
			if traced {
				rig.h.route.Spans = otel.NewTracer(tp, nil).Start
				rig.h.tap.AddRouted(func(x pipeline.Routed) { otel.EndSpan(x.Record, x.Span) })
			}
			rig.serve(b, true)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rig.serve(b, true)
			}
			b.StopTimer()
			rig.h.tap.Flush()
		})
	}
}

// nopProcessor receives ended spans and keeps nothing, so the benchmarks measure the spans.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }
