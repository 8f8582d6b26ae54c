package recorder

import (
	"context"
	"math/rand/v2"
	"strings"
	"syscall"
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
// records+trace_counted is a request whose server reported no usage: the tokenizer counts its
// prompt, and the trace cuts its hash_ids from the same tokens.
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
		{"records+trace_parquet", Options{Records: true, Trace: true, Format: FormatParquet}},
		{"records+trace_counted", Options{Records: true, Trace: true}}, // the server reported no usage
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
				if strings.HasSuffix(m.name, "_counted") {
					rc.InputTokens, rc.InputTokensSource = -1, record.SourceNone
				}
				meter.Finalize(rc, nil)
				if r != nil {
					r.Submit(rc, nil)
				}
				rc.RequestBody, rc.PromptIDs = nil, nil // as the pipeline does after the sinks
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

// BenchmarkTraceThroughput is the trace's pace on long prompts: each op submits one record of
// a chat request whose prompt is 1 MiB of words (a new prompt each time, drawn from a few
// thousand words), with server-reported usage, to a recorder writing records and trace (the
// default files); the writer tokenizes the prompt (o200k_base) for its block ids. MB/s is
// prompt megabytes per second of wall time; MB/cpu-s per second of the process's CPU time
// (both goroutines, the garbage collector included), the figure that does not depend on how
// busy the machine is: the throughput per core.
//
//	go test ./telemetry/recorder -run '^$' -bench TraceThroughput -benchtime 20x
func BenchmarkTraceThroughput(b *testing.B) {
	const promptBytes = 1 << 20
	rng := rand.New(rand.NewPCG(3, 4))
	words := make([]string, 4000)
	for i := range words {
		w := make([]byte, 2+rng.IntN(9))
		for j := range w {
			w[j] = byte('a' + min(rng.IntN(26), rng.IntN(26)))
		}
		words[i] = string(w)
	}
	bodies := make([][]byte, 8)
	for i := range bodies {
		var p strings.Builder
		for p.Len() < promptBytes {
			p.WriteString(words[rng.IntN(len(words))])
			p.WriteByte(" \n"[min(rng.IntN(12), 1)^1])
		}
		bodies[i] = chat("m", p.String()[:promptBytes], 16)
	}
	r, err := New(Options{Dir: b.TempDir(), Records: true, Trace: true, QueueBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = r.Close(context.Background()) }()
	t0 := time.Now()
	cpu0 := cpuTime()
	b.SetBytes(promptBytes)
	b.ResetTimer()
	for i := range b.N {
		rc := benchRecord(i, t0, bodies[i%len(bodies)])
		rc.InputTokens = 300_000
		r.Submit(rc, nil)
		if i%4 == 3 {
			if err := r.Flush(context.Background()); err != nil { // bound the queue
				b.Fatal(err)
			}
		}
	}
	if err := r.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := r.Stats(); st.Dropped+st.Shed != 0 {
		b.Fatalf("stats %+v: records dropped or shed", st)
	}
	b.ReportMetric(float64(b.N)*promptBytes/1e6/(cpuTime()-cpu0).Seconds(), "MB/cpu-s")
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
