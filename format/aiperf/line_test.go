package aiperf

import (
	stdjson "encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestExportLinesEncodeAsEncodingJSON guards the choice of goccy/go-json for
// profile_export.jsonl (2.7× cheaper per line than encoding/json, which was a third of the
// generator's per-request CPU): every line must be byte for byte what encoding/json writes,
// HTML-escaping, invalid UTF-8, line separators and the embedded record's custom encodings
// included.
func TestExportLinesEncodeAsEncodingJSON(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	start := time.Date(2026, 12, 1, 6, 5, 25, 849019944, time.UTC)
	recs := []*record.Record{
		{RequestID: "bench-x-1", Class: "bench", Model: "mock-model", Path: "/v1/chat/completions", API: "openai.chat",
			Status: 200, Start: start, TTFTMs: ms(20.5), TTSTMs: ms(25.25), RequestLatencyMs: ms(660.125),
			ITLMs: ms(5.0000001), DurationMs: 660.125, InputTokens: 512, OutputTokens: 128, UsageOutputTokens: 128,
			Choices: 1, Bytes: 30123, Stream: true},
		{RequestID: "bench-x-2", Class: "bench", Model: "<script>&\u2028\u2029\"quoted\"\\", Path: "/v1/completions?a=<b>",
			Status: 503, Error: record.ErrUpstream, ErrorMsg: "bad \xff\xfe utf-8 \t\n\x00 and <html>", Start: start,
			UsageOutputTokens: -1, DurationMs: 1e-7},
		{RequestID: "bench-x-3", UsageOutputTokens: -1, DurationMs: 1.5e21},
	}
	for i, rec := range recs {
		session := "s\u00e9ssion-<1>"
		line := &Line{Record: rec, N: i, SessionID: session, Intended: start.Add(-time.Millisecond),
			ScheduleLagMs: 0.020432, QueueWaitMs: 3e-9, EffectiveLatencyMs: 46.110559, WasCancelled: i == 1,
			SendError: "\u007f<>&", ErrorClass: rec.Error, Error: NewErrorDetails(rec, i == 1, "\u007f<>&"),
			Metadata: LineMeta{XRequestID: rec.RequestID, RequestStartNs: start.UnixNano(),
				BenchmarkPhase: "profiling", XCorrelationID: &session, WorkerID: "llmtap"}}
		line.Metrics.Fill(rec, 46.110559, start.UnixNano(), start.UnixNano()+660125000)
		want, err := stdjson.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		// The metrics object is what AIPerf writes, a map of tag to {value, unit}: the struct
		// must encode as that map does (keys sorted, absent ones left out).
		var parsed struct {
			Metrics stdjson.RawMessage `json:"metrics"`
		}
		if err := stdjson.Unmarshal(want, &parsed); err != nil {
			t.Fatal(err)
		}
		var asMap map[string]stdjson.RawMessage
		if err := stdjson.Unmarshal(parsed.Metrics, &asMap); err != nil {
			t.Fatal(err)
		}
		if again, _ := stdjson.Marshal(asMap); string(again) != string(parsed.Metrics) {
			t.Errorf("line %d: metrics %s, as a map %s", i, parsed.Metrics, again)
		}
		if wantKeys := []int{10, 2, 4}[i]; len(asMap) != wantKeys {
			t.Errorf("line %d: metrics %s: want %d of them", i, parsed.Metrics, wantKeys)
		}
		got, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("line %d:\ngoccy/go-json: %s\nencoding/json: %s", i, got, want)
		}
	}
}

// BenchmarkExportLine is one profile_export.jsonl line of a small non-streaming request,
// encoded by encoding/json and by goccy/go-json (what the collector uses): compare the two in
// one run.
func BenchmarkExportLine(b *testing.B) {
	lat := 46.05
	rec := &record.Record{RequestID: "bench-x-120", Class: "bench", Model: "mock-model", Path: "/v1/chat/completions",
		API: "openai.chat", Status: 200, Start: time.Now(), RequestLatencyMs: &lat, DurationMs: lat, InputTokens: 5,
		OutputTokens: 4, UsageOutputTokens: 4, Choices: 1, Bytes: 298}
	line := &Line{Record: rec, N: 120, Intended: time.Now(), ScheduleLagMs: 0.02, QueueWaitMs: 0.003,
		EffectiveLatencyMs: 46.11, Metadata: LineMeta{XRequestID: rec.RequestID, BenchmarkPhase: "profiling"}}
	line.Metrics.Fill(rec, 46.11, 1, 2)
	for _, enc := range []struct {
		name   string
		encode func(io.Writer) func(any) error
	}{
		{"encoding-json", func(w io.Writer) func(any) error { return stdjson.NewEncoder(w).Encode }},
		{"goccy-go-json", func(w io.Writer) func(any) error { return json.NewEncoder(w).Encode }},
	} {
		b.Run(enc.name, func(b *testing.B) {
			encode := enc.encode(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				if err := encode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAIPerfErrorWithoutDetails reads AIPerf's error that carries no details: at db4f6397
// (inference_result_parser.py, record_models.py ParsedResponseRecord.valid) a 200 whose stream
// held no content is an invalid record with error None, so its line has error_request_count
// and "error": null, and AIPerf counts it in error_request_count. The report must count it as
// an error too (before, it read as a success: an error rate of 0 where AIPerf counted 1).
func TestAIPerfErrorWithoutDetails(t *testing.T) {
	t.Parallel()
	meta := `"session_num":%d,"x_request_id":"r%d","request_start_ns":1760000000000000000,"request_end_ns":1760000000100000000,"worker_id":"w","record_processor_id":"p","benchmark_phase":"profiling"`
	lines := []string{
		`{"metadata":{` + fmt.Sprintf(meta, 0, 0) + `},"metrics":{"request_count":{"value":1,"unit":"requests"},"time_to_first_token":{"value":12.5,"unit":"ms"},"request_latency":{"value":100.0,"unit":"ms"}},"error":null}`,
		`{"metadata":{` + fmt.Sprintf(meta, 1, 1) + `},"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":null}`,
	}
	var errs, ok int
	for i, l := range lines {
		r, fromAIPerf, why := ParseLine([]byte(l), "m")
		if r == nil || !fromAIPerf {
			t.Fatalf("line %d: not read as AIPerf's: %s", i, why)
		}
		if r.OK() {
			ok++
		} else {
			errs++
		}
	}
	if ok != 1 || errs != 1 {
		t.Errorf("%d valid, %d errors; AIPerf counted 1 and 1", ok, errs)
	}
}
