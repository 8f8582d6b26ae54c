package recorder

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
)

// BenchmarkRecording measures the CPU one record costs, measurement alone (meter.Finalize, what
// the record pipeline does for every request) against measurement plus recording: the writer
// goroutine's encoding, tokenizing (trace) and redaction-free payload check, with its share of
// file writes. Each op finalizes and submits one record of a ~600-token chat request; the
// writer drains the queue before the timer stops, so ns/op is the whole per-record cost.
//
//	go test ./telemetry/recorder -run '^$' -bench Recording -benchtime 2000x
func BenchmarkRecording(b *testing.B) {
	body := chat("m", strings.Repeat("The keeper trims the wick and winds the clockwork. ", 60), 128)
	modes := []struct {
		name string
		opt  Options
	}{
		{"measurement_only", Options{}},
		{"records", Options{Records: true}},
		{"records+trace", Options{Records: true, Trace: true}},
		{"records+trace+payloads", Options{Records: true, Trace: true, Payloads: true}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var r *Recorder
			if m.opt.Records || m.opt.Trace || m.opt.Payloads {
				m.opt.Dir = b.TempDir()
				m.opt.Queue = b.N + 1
				var err error
				if r, err = New(m.opt); err != nil {
					b.Fatal(err)
				}
			}
			t0 := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				rc := benchRecord(i, t0, body)
				meter.Finalize(rc)
				if r != nil {
					r.Submit(rc)
				}
				rc.RequestBody = nil // as the pipeline does after the sinks
			}
			if r != nil {
				if err := r.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
				if d := r.Stats().Dropped; d != 0 {
					b.Fatalf("%d records dropped", d)
				}
			}
			b.StopTimer()
			if r != nil {
				_ = r.Close(context.Background())
			}
		})
	}
}

// benchRecord is a streamed chat record with server-reported usage (vLLM's usual case), so
// measurement does not tokenize; the trace's hash ids always do.
func benchRecord(i int, t0 time.Time, body []byte) *record.Record {
	ttft, lat := 50.0, 900.0
	return &record.Record{
		RequestID: "req-" + strings.Repeat("x", i%3), Class: record.ClassLive, Path: "/v1/chat/completions",
		API: "openai.chat", Stream: true, Status: 200, Start: t0,
		TTFTMs: &ttft, RequestLatencyMs: &lat, InterChunkMs: make([]float64, 128), DurationMs: 901,
		InputTokens: 640, InputTokensSource: record.SourceUsage,
		OutputTokens: 128, OutputTokensSource: record.SourceUsage, UsageOutputTokens: 128,
		ContentEvents: 128, Events: 130, Bytes: 30000, RequestBody: body,
	}
}
