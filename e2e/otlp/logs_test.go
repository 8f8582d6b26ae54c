package otlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// runLogsProxy runs Caddy (tracing, llmtap recording records to dir with the given record
// options, reverse_proxy to the mock) and returns the site's and the admin's base URLs.
func runLogsProxy(t *testing.T, dir, recordOpts string) (site, admin string) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	_, mockURL := testkit.StartMock(t, cfg)
	adminAddr, addr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	testkit.StartCaddyfile(t, "logs.Caddyfile", fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %s
	log {
		level FATAL
	}
}

http://%s {
	tracing {
		span %s
	}
	llmtap {
		record %s {
			files records
%s
		}
	}
	reverse_proxy %s {
		flush_interval -1
	}
}
`, adminAddr, t.TempDir(), addr, caddySpan, dir, recordOpts, strings.TrimPrefix(mockURL, "http://")))
	return "http://" + addr, "http://" + adminAddr
}

// sendLogStreams sends n streaming chat completions with request ids prefix-0 … and checks
// that each was served in full.
func sendLogStreams(t *testing.T, site, prefix string, n int) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for i := range n {
		body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Name a lighthouse."}]}`, model, maxTokens)
		req, _ := http.NewRequest(http.MethodPost, site+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", fmt.Sprintf("%s-%d", prefix, i))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("data: [DONE]")) {
			t.Fatalf("request %s-%d: %s, stream complete %v", prefix, i, resp.Status, bytes.Contains(b, []byte("data: [DONE]")))
		}
	}
}

// recordsFile reads every records-*.jsonl line in dir, flattened with dots (nested objects),
// nulls and empty strings left out, by request id.
func recordsFile(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "records-*.jsonl"))
	out := map[string]map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			flat := map[string]any{}
			flatten("", m, flat)
			id, _ := m["request_id"].(string)
			if _, dup := out[id]; dup {
				t.Fatalf("request %s twice in the records file", id)
			}
			out[id] = flat
		}
	}
	return out
}

func flatten(prefix string, m, out map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
		case string:
			if v != "" {
				out[prefix+k] = v
			}
		case map[string]any:
			flatten(prefix+k+".", v, out)
		default:
			out[prefix+k] = v
		}
	}
}

// fileToAttr is the attribute each records-file field arrives under: the semantic
// conventions' names (GenAI, HTTP, URL, error), written out here from the conventions, and
// llmtap.<field> for the rest.
var fileToAttr = map[string]string{
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

var derivedAttrs = map[string]bool{"gen_ai.operation.name": true, "gen_ai.provider.name": true, "gen_ai.request.model": true}

// equalAttr reports whether the received attribute v is the file's value want.
func equalAttr(v pcommon.Value, want any) bool {
	switch w := want.(type) {
	case string:
		if v.Type() == pcommon.ValueTypeSlice {
			s := v.Slice()
			return s.Len() == 1 && s.At(0).Type() == pcommon.ValueTypeStr && s.At(0).Str() == w
		}
		return v.Type() == pcommon.ValueTypeStr && v.Str() == w
	case bool:
		return v.Type() == pcommon.ValueTypeBool && v.Bool() == w
	case json.Number:
		switch v.Type() {
		case pcommon.ValueTypeInt:
			n, err := w.Int64()
			return err == nil && n == v.Int()
		case pcommon.ValueTypeDouble:
			x, err := w.Float64()
			return err == nil && x == v.Double()
		}
	case []any:
		if v.Type() != pcommon.ValueTypeSlice || v.Slice().Len() != len(w) {
			return false
		}
		for i := range len(w) {
			if !equalAttr(v.Slice().At(i), w[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// receivedLogs returns the llmtap.request log records the receiver got, by request id,
// failing on a request that arrived twice, and the resource's service.name.
func receivedLogs(t *testing.T, all []plog.Logs) map[string]plog.LogRecord {
	t.Helper()
	out := map[string]plog.LogRecord{}
	for _, ld := range all {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			for j := range rl.ScopeLogs().Len() {
				sl := rl.ScopeLogs().At(j)
				for k := range sl.LogRecords().Len() {
					lr := sl.LogRecords().At(k)
					if lr.EventName() != otel.EventRequest {
						continue
					}
					id, _ := lr.Attributes().Get("llmtap.request_id")
					if _, dup := out[id.Str()]; dup {
						t.Errorf("request %s arrived twice", id.Str())
					}
					out[id.Str()] = lr
				}
			}
		}
	}
	return out
}

// checkLogRecords checks the log records received against the records file, by request id:
// every request of the file arrived as a log record, none that it does not hold, each with
// every field of its line as an attribute of equal value under the conventions' name or
// llmtap.*, and nothing else but the derived GenAI attributes.
func checkLogRecords(t *testing.T, file map[string]map[string]any, logs map[string]plog.LogRecord) {
	t.Helper()
	for id, want := range file {
		lr, ok := logs[id]
		if !ok {
			t.Errorf("request %s is in the records file but arrived as no log record", id)
			continue
		}
		seen := map[string]bool{}
		for k, v := range want {
			key, ok := fileToAttr[k]
			if !ok {
				key = "llmtap." + k
			}
			seen[key] = true
			got, ok := lr.Attributes().Get(key)
			if !ok {
				t.Errorf("%s: field %s has no attribute %s", id, k, key)
			} else if !equalAttr(got, v) {
				t.Errorf("%s: attribute %s = %v (%s), the file has %v", id, key, got.AsString(), got.Type(), v)
			}
		}
		lr.Attributes().Range(func(k string, v pcommon.Value) bool {
			if !seen[k] && !derivedAttrs[k] {
				t.Errorf("%s: attribute %s = %s is no field of the records file", id, k, v.AsString())
			}
			return true
		})
	}
	for id := range logs {
		if _, ok := file[id]; !ok {
			t.Errorf("request %s arrived as a log record but the recording left it out", id)
		}
	}
}

// spansByRequest maps each request id to its llmtap span's ids.
func spansByRequest(all []ptrace.Traces) map[string]ptrace.Span {
	out := map[string]ptrace.Span{}
	for _, td := range all {
		for i := range td.ResourceSpans().Len() {
			rs := td.ResourceSpans().At(i)
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j)
				for k := range ss.Spans().Len() {
					sp := ss.Spans().At(k)
					if id, ok := sp.Attributes().Get("llmtap.request_id"); ok {
						out[id.Str()] = sp
					}
				}
			}
		}
	}
	return out
}

// TestOTLPLogs runs Caddy recording a 50 % sample of its requests with otlp_logs on (over gRPC
// enabled by the config field; over HTTP/protobuf by OTEL_LOGS_EXPORTER=otlp alone), sends
// streams, stops Caddy, and checks what the Collector's OTLP receiver got against the records
// file: every request the file holds arrived exactly once as a log record, none it does not
// hold (the same sample), each with every field of its line as an attribute of equal value
// under the conventions' name or llmtap.*, and nothing else but the derived GenAI attributes;
// and each log record carries the trace and span ids of its request's span.
func TestOTLPLogs(t *testing.T) {
	for _, c := range []struct{ proto, recordOpts, env string }{
		{"grpc", "\t\t\tsample 50%\n\t\t\totlp_logs", ""},
		{"http/protobuf", "\t\t\tsample 50%", "otlp"},
	} {
		t.Run(strings.ReplaceAll(c.proto, "/", "_"), func(t *testing.T) {
			const n = 24
			rcv := startReceiver(t)
			endpoint := "http://" + rcv.httpAddr
			if c.proto == "grpc" {
				endpoint = "http://" + rcv.grpcAddr
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", c.proto)
			t.Setenv("OTEL_METRICS_EXPORTER", "none")
			t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
			t.Setenv("OTEL_LOGS_EXPORTER", c.env)
			dir := t.TempDir()
			site, _ := runLogsProxy(t, dir, c.recordOpts)
			proc := running(t) // its counts outlive caddy.Stop
			before := proc.OTLPLogStats()
			sendLogStreams(t, site, "logs", n)
			if err := caddy.Stop(); err != nil { // drains the pipeline, closes the recorder, flushes the export
				t.Fatal(err)
			}
			file := recordsFile(t, dir)
			if len(file) == 0 || len(file) == n {
				t.Fatalf("the records file holds %d of %d requests: a 50%% sample of 24 ids keeps some and leaves some", len(file), n)
			}
			waitFor(t, "a log record per recorded request", func() bool { return rcv.logs.LogRecordCount() >= len(file) })
			logs := receivedLogs(t, rcv.logs.AllLogs())
			spans := spansByRequest(rcv.traces.AllTraces())
			if len(logs) != len(file) {
				t.Errorf("received %d log records, the records file holds %d", len(logs), len(file))
			}
			checkLogRecords(t, file, logs)
			for id := range file {
				lr := logs[id]
				sp, ok := spans[id]
				if !ok {
					t.Errorf("%s: no span received", id)
				} else if lr.TraceID() != sp.TraceID() || lr.SpanID() != sp.SpanID() {
					t.Errorf("%s: log record ids %s/%s, its span's %s/%s", id, lr.TraceID(), lr.SpanID(), sp.TraceID(), sp.SpanID())
				}
			}
			after := proc.OTLPLogStats()
			if got := after.Exported - before.Exported; got != uint64(len(file)) {
				t.Errorf("llmtap counted %d log records exported, want %d", got, len(file))
			}
			for r := range after.Dropped {
				if d := after.Dropped[r] - before.Dropped[r]; d != 0 {
					t.Errorf("%d dropped as %s with the Collector up", d, otel.LogDropReason(r))
				}
			}
		})
	}
}

// TestOTLPLogsCollectorDown stops the Collector's receiver in the middle of a run whose export
// queue holds 16 records: every request of the run is still served in full and written to the
// records file, the records the export could not deliver are dropped and counted by reason
// (queue_full among them, so records were refused rather than waited for), every record is
// counted exactly once (exported + dropped = recorded), the record pipeline dropped nothing
// (the log sink never held it up), and /metrics serves the drops while Caddy runs.
func TestOTLPLogsCollectorDown(t *testing.T) {
	const first, second = 6, 80
	rcv := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.grpcAddr)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_LOGS_EXPORTER", "")
	t.Setenv("OTEL_BLRP_MAX_QUEUE_SIZE", "16")
	t.Setenv("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "8")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "20")
	t.Setenv("OTEL_BLRP_EXPORT_TIMEOUT", "2000")
	dir := t.TempDir()
	site, admin := runLogsProxy(t, dir, "\t\t\totlp_logs")
	proc := running(t) // its counts outlive caddy.Stop
	before, pipeBefore := proc.OTLPLogStats(), proc.RecordsDropped()
	sendLogStreams(t, site, "up", first)
	waitFor(t, "the first requests' log records", func() bool { return rcv.logs.LogRecordCount() >= first })
	rcv.stop()
	sendLogStreams(t, site, "down", second)
	// The drops are on /metrics while the proxy runs.
	var metrics string
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(metrics, `llmtap_otlp_logs_dropped_total{reason="queue_full"}`) || strings.Contains(metrics, `llmtap_otlp_logs_dropped_total{reason="queue_full"} 0`) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics shows no queue_full drop:\n%s", grepLines(metrics, "llmtap_otlp_logs"))
		}
		time.Sleep(50 * time.Millisecond)
		resp, err := http.Get(admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	file := recordsFile(t, dir)
	if len(file) != first+second {
		t.Errorf("the records file holds %d requests, want all %d: the Collector's absence must not touch the recording", len(file), first+second)
	}
	after := proc.OTLPLogStats()
	exported := after.Exported - before.Exported
	var dropped [otel.NumLogDropReasons]uint64
	var total uint64
	for r := range dropped {
		dropped[r] = after.Dropped[r] - before.Dropped[r]
		total += dropped[r]
	}
	t.Logf("exported %d, dropped %v (queue_full, export_failed, shutdown) of %d", exported, dropped, len(file))
	if exported+total != uint64(len(file)) {
		t.Errorf("exported %d + dropped %d != %d recorded: every record must be counted once", exported, total, len(file))
	}
	if exported < first || exported > first+16 {
		t.Errorf("exported %d; want the %d sent before the Collector stopped, and at most a queue (16) more", exported, first)
	}
	if dropped[otel.LogQueueFull] == 0 {
		t.Error("no queue_full drop although the Collector was down for 80 requests with a queue of 16")
	}
	if got := uint64(rcv.logs.LogRecordCount()); got != exported {
		t.Errorf("the receiver got %d log records, llmtap counted %d exported", got, exported)
	}
	if d := proc.RecordsDropped() - pipeBefore; d != 0 {
		t.Errorf("the record pipeline dropped %d records: the log sink held it up", d)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}
