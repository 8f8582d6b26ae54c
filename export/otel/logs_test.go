package otel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/telemetry/record"
)

// semconvNames are the attribute names the OpenTelemetry semantic conventions give the records
// file's fields (the GenAI attributes and the general HTTP, URL and error ones), written out
// here from the conventions rather than taken from the package under test.
var semconvNames = map[string]string{
	"model":              "gen_ai.response.model",
	"session_id":         "gen_ai.conversation.id",
	"stream":             "gen_ai.request.stream",
	"status":             "http.response.status_code",
	"error":              "error.type",
	"finish_reason":      "gen_ai.response.finish_reasons",
	"input_tokens":       "gen_ai.usage.input_tokens",
	"output_tokens":      "gen_ai.usage.output_tokens",
	"reasoning_tokens":   "gen_ai.usage.reasoning.output_tokens",
	"cached_tokens":      "gen_ai.usage.cache_read.input_tokens",
	"cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
	"path":               "url.path",
}

// derived are the attributes that are not a field of the file.
var derived = map[string]bool{"gen_ai.operation.name": true, "gen_ai.provider.name": true, "gen_ai.request.model": true}

// fillAll sets every settable field of v (a struct) to a distinct non-zero value, pointers
// allocated, so that a field added to record.Record later is covered without touching this
// test.
func fillAll(v reflect.Value, n *int) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("s%d", *n))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(int64(*n))
		case reflect.Float64:
			f.SetFloat(float64(*n) + 0.25)
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.Float64 {
				f.Set(reflect.ValueOf([]float64{1.5, float64(*n)}))
			}
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			switch p.Elem().Kind() {
			case reflect.Float64:
				p.Elem().SetFloat(float64(*n) + 0.5)
			case reflect.Struct:
				fillAll(p.Elem(), n)
			}
			f.Set(p)
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[time.Time]() {
				f.Set(reflect.ValueOf(time.Date(2026, 5, 14, 10, 15, 2, 123456789, time.UTC)))
			}
		}
	}
}

// fileFields is the record as the records file writes it (encoding/json, one line), flattened
// with dots, nulls and empty strings left out.
func fileFields(t *testing.T, r *record.Record) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(r); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var flat func(prefix string, m map[string]any)
	flat = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case nil:
			case string:
				if v != "" {
					out[prefix+k] = v
				}
			case map[string]any:
				flat(prefix+k+".", v)
			default:
				out[prefix+k] = v
			}
		}
	}
	flat("", m)
	return out
}

// checkLogEqualsFile fails unless the attributes are exactly the file's fields, named by the
// conventions or under llmtap.*, with equal values, plus the derived ones.
func checkLogEqualsFile(t *testing.T, attrs map[string]attribute.Value, file map[string]any) {
	t.Helper()
	seen := map[string]bool{}
	for k, want := range file {
		key, ok := semconvNames[k]
		if !ok {
			key = "llmtap." + k
		}
		seen[key] = true
		got, ok := attrs[key]
		if !ok {
			t.Errorf("field %s: no attribute %s", k, key)
			continue
		}
		if !sameValue(got, want) {
			t.Errorf("field %s: attribute %s = %v (%s), file has %v", k, key, got.String(), got.Type(), want)
		}
	}
	for k := range attrs {
		if !seen[k] && !derived[k] {
			t.Errorf("attribute %s = %v is no field of the records file", k, attrs[k].String())
		}
	}
}

func sameValue(got attribute.Value, want any) bool {
	switch w := want.(type) {
	case string:
		if got.Type() == attribute.STRINGSLICE {
			s := got.AsStringSlice()
			return len(s) == 1 && s[0] == w
		}
		return got.Type() == attribute.STRING && got.AsString() == w
	case bool:
		return got.Type() == attribute.BOOL && got.AsBool() == w
	case json.Number:
		switch got.Type() {
		case attribute.INT64:
			n, err := w.Int64()
			return err == nil && n == got.AsInt64()
		case attribute.FLOAT64:
			x, err := w.Float64()
			return err == nil && x == got.AsFloat64()
		}
	case []any:
		if got.Type() != attribute.FLOAT64SLICE || len(got.AsFloat64Slice()) != len(w) {
			return false
		}
		for i, x := range got.AsFloat64Slice() {
			if !sameValue(attribute.Float64Value(x), w[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// memExporter keeps what it is given; block, when not nil, holds every export until closed;
// fail makes every export fail.
type memExporter struct {
	mu    sync.Mutex
	recs  []sdklog.Record
	block chan struct{}
	fail  bool
}

func (e *memExporter) Export(ctx context.Context, recs []sdklog.Record) error {
	if e.block != nil {
		select {
		case <-e.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e.fail {
		return errors.New("collector unavailable")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		e.recs = append(e.recs, r.Clone())
	}
	return nil
}
func (*memExporter) Shutdown(context.Context) error   { return nil }
func (*memExporter) ForceFlush(context.Context) error { return nil }

func (e *memExporter) records() []sdklog.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]sdklog.Record(nil), e.recs...)
}

func attrsOf(r sdklog.Record) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool { m[string(kv.Key)] = kv.Value; return true })
	return m
}

// TestLogRecordEqualsRecordsFile exports a record with every field set (nested ones too) and
// one with the fields a plain request leaves empty, and checks each log record field for field
// against the line the records file writes, the trace and span ids of the request's span, the
// timestamp and the severity.
func TestLogRecordEqualsRecordsFile(t *testing.T) {
	t.Parallel()
	full := &record.Record{}
	n := 0
	fillAll(reflect.ValueOf(full).Elem(), &n)
	full.API = "openai.chat"
	full.Error = "" // succeeded
	tp := sdktrace.NewTracerProvider()
	_, span := tp.Tracer("t").Start(context.Background(), "chat")

	plain := &record.Record{RequestID: "r2", Class: record.ClassLive, Model: record.UnknownModel, API: "unknown",
		Status: 502, Error: record.ErrHTTP, Start: time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC), DurationMs: 3,
		UsageOutputTokens: -1}

	exp := &memExporter{}
	l, err := otel.NewLogs(context.Background(), otel.LogsOptions{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []*record.Record{full, plain} {
		sp := span // the full record's request had a span; the plain one's none
		if i > 0 {
			sp = nil
		}
		if !l.Emit(r, sp) {
			t.Fatal("Emit dropped a record with an empty queue")
		}
	}
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := exp.records()
	if len(got) != 2 {
		t.Fatalf("exported %d log records, want 2", len(got))
	}
	if st := l.Stats(); st.Exported != 2 || st.Dropped != [otel.NumLogDropReasons]uint64{} {
		t.Errorf("stats %+v, want 2 exported and none dropped", st)
	}
	for i, r := range []*record.Record{full, plain} {
		lr := got[i]
		attrs := attrsOf(lr)
		if lr.AttributesLen() != len(attrs) {
			t.Errorf("record %d: %d attributes for %d distinct keys: a key is repeated", i, lr.AttributesLen(), len(attrs))
		}
		checkLogEqualsFile(t, attrs, fileFields(t, r))
		if lr.EventName() != otel.EventRequest || !lr.Timestamp().Equal(r.Start) {
			t.Errorf("record %d: event %q at %v, want %q at %v", i, lr.EventName(), lr.Timestamp(), otel.EventRequest, r.Start)
		}
		if got, want := attrs["gen_ai.operation.name"].AsString(), otel.Operation(r.API); got != want {
			t.Errorf("record %d: gen_ai.operation.name %q, want %q", i, got, want)
		}
	}
	if sc := span.SpanContext(); got[0].TraceID() != sc.TraceID() || got[0].SpanID() != sc.SpanID() {
		t.Errorf("trace/span ids %s/%s, want the request span's %s/%s", got[0].TraceID(), got[0].SpanID(), sc.TraceID(), sc.SpanID())
	}
	if got[1].TraceID().IsValid() {
		t.Errorf("a request without a span got trace id %s", got[1].TraceID())
	}
	if got[0].Severity().String() != "INFO" || got[1].Severity().String() != "WARN" {
		t.Errorf("severities %s and %s, want INFO for the success and WARN for the failure", got[0].Severity(), got[1].Severity())
	}
	if _, ok := attrsOf(got[1])["gen_ai.request.model"]; ok {
		t.Error("gen_ai.request.model set for a request that named no model")
	}
}

// TestLogsQueueBounded holds every export (a Collector that does not answer) and emits more
// records than the queue holds: exactly MaxQueue are taken, the rest are dropped and counted
// as queue_full at once, and once the Collector answers every taken record is exported. The
// SDK's BatchProcessor alone would accept every record and silently drop the oldest.
func TestLogsQueueBounded(t *testing.T) {
	t.Parallel()
	const queue, emitted = 8, 100
	exp := &memExporter{block: make(chan struct{})}
	l, err := otel.NewLogs(context.Background(), otel.LogsOptions{Exporter: exp, MaxQueue: queue, MaxBatch: 4,
		Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for i := range emitted {
		if l.Emit(&record.Record{RequestID: fmt.Sprint(i), Start: time.Now()}, nil) {
			taken++
		}
	}
	if taken != queue {
		t.Errorf("Emit took %d records while the exporter was stuck, want the queue size %d", taken, queue)
	}
	if d := l.Stats().Dropped[otel.LogQueueFull]; d != emitted-queue {
		t.Errorf("queue_full drops %d, want %d", d, emitted-queue)
	}
	close(exp.block)
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Exported != queue || len(exp.records()) != queue {
		t.Errorf("exported %d (exporter got %d), want %d", st.Exported, len(exp.records()), queue)
	}
	if l.Emit(&record.Record{}, nil) || l.Stats().Dropped[otel.LogShutdown] != 1 {
		t.Error("a record emitted after Shutdown is not dropped as shutdown")
	}
}

// TestLogsExportFailedCounted: every record of a failed export is counted as export_failed,
// and the queue is free again afterwards.
func TestLogsExportFailedCounted(t *testing.T) {
	t.Parallel()
	exp := &memExporter{fail: true}
	l, err := otel.NewLogs(context.Background(), otel.LogsOptions{Exporter: exp, MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l.Emit(&record.Record{Start: time.Now()}, nil)
	}
	_ = l.ForceFlush(context.Background())
	for range 4 { // the failed ones left the queue
		if !l.Emit(&record.Record{Start: time.Now()}, nil) {
			t.Fatal("queue still full after a failed export")
		}
	}
	_ = l.Shutdown(context.Background())
	if st := l.Stats(); st.Dropped[otel.LogExportFailed] != 7 || st.Exported != 0 {
		t.Errorf("stats %+v, want 7 export_failed", st)
	}
}

func TestLogsEnabled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false}, // an endpoint alone: metrics, not logs
		{map[string]string{"OTEL_LOGS_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_LOGS_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_LOGS_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_LOGS_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := otel.LogsEnabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("LogsEnabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// BenchmarkLogEmit is the cost a request's record pays on the record pipeline's worker with
// log export on: mapping it to a log record and queuing it (the export itself runs on the
// processor's goroutine, to a discarding exporter here). "stream" is a successful 128-token
// stream (the record BenchmarkSpan ends, 127 inter-chunk gaps); "full" has every field set
// (83 attributes). queue_full must stay 0, or the figure is that of dropping.
func BenchmarkLogEmit(b *testing.B) {
	t0 := time.Now()
	ttft, itl := 40.0, 2.0
	gaps := make([]float64, 127)
	for i := range gaps {
		gaps[i] = 2
	}
	stream := &record.Record{RequestID: "r1", Class: record.ClassLive, Model: "m1", API: "openai.chat", Stream: true,
		Status: 200, Finish: "stop", Start: t0, TTFTMs: &ttft, TTFOMs: &ttft, ITLMs: &itl, RequestLatencyMs: &ttft,
		InterChunkMs: gaps, DurationMs: 300, InputTokens: 20, InputTokensSource: record.SourceUsage, OutputTokens: 128,
		OutputTokensSource: record.SourceUsage, UsageOutputTokens: 128, ContentEvents: 128, Events: 130, Bytes: 30000,
		RequestModel: "m1"}
	full := &record.Record{}
	n := 0
	fillAll(reflect.ValueOf(full).Elem(), &n)
	full.API, full.Error = "openai.chat", ""
	for _, c := range []struct {
		name string
		r    *record.Record
	}{{"stream", stream}, {"full", full}} {
		b.Run(c.name, func(b *testing.B) {
			l, err := otel.NewLogs(context.Background(), otel.LogsOptions{Exporter: discard{}, MaxQueue: 1 << 16, MaxBatch: 512})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = l.Shutdown(context.Background()) }()
			b.ReportAllocs()
			for b.Loop() {
				l.Emit(c.r, nil)
			}
			b.StopTimer()
			b.ReportMetric(float64(l.Stats().Dropped[otel.LogQueueFull]), "queue_full")
		})
	}
}

type discard struct{}

func (discard) Export(context.Context, []sdklog.Record) error { return nil }
func (discard) Shutdown(context.Context) error                { return nil }
func (discard) ForceFlush(context.Context) error              { return nil }
