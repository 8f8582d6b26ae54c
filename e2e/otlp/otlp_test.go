package otlp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive
	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// receiver is the OpenTelemetry Collector's OTLP receiver (gRPC and HTTP) for metrics, logs
// and traces, run in-process on loopback, feeding sinks that keep everything it accepted; stop
// shuts it down (a Collector going away mid-run), as the test's end does.
type receiver struct {
	grpcAddr, httpAddr string
	metrics            *consumertest.MetricsSink
	logs               *consumertest.LogsSink
	traces             *consumertest.TracesSink
	stop               func()
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{grpcAddr: testkit.FreeAddr(t), httpAddr: testkit.FreeAddr(t),
		metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink), traces: new(consumertest.TracesSink)}
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = r.grpcAddr
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = r.httpAddr
	set := receivertest.NewNopSettings(f.Type())
	ctx := context.Background()
	mr, err := f.CreateMetrics(ctx, set, cfg, r.metrics)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := f.CreateLogs(ctx, set, cfg, r.logs)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.CreateTraces(ctx, set, cfg, r.traces)
	if err != nil {
		t.Fatal(err)
	}
	// The signals share one receiver instance (the factory keys it by config): start once.
	if err := mr.Start(ctx, componentHost{}); err != nil {
		t.Fatal(err)
	}
	stopped := false
	r.stop = func() {
		if !stopped {
			stopped = true
			_ = tr.Shutdown(context.Background())
			_ = lr.Shutdown(context.Background())
			_ = mr.Shutdown(context.Background())
		}
	}
	t.Cleanup(r.stop)
	return r
}

type componentHost struct{}

func (componentHost) GetExtensions() map[component.ID]component.Component { return nil }

const (
	model     = "mock-7b"
	streams   = 6
	maxTokens = 12
	mockTTFT  = 40 * time.Millisecond
	caddySpan = "caddy-proxy"
	failedID  = "otlp-down"
)

// The GPU the test pretends to have: the app module wires the NVML sampler the same way.
var fakeGPU = gpu.Sample{UUID: "GPU-e2e-0", Name: "NVIDIA H200", PowerMW: 412000, EnergyMJ: 98765000,
	GPUUtil: 93, MemUsed: 100 << 30, MemTotal: 141 << 30, TempC: 55, Valid: gpu.FieldAll}

// TestOTLPExport runs Caddy from a Caddyfile (the tracing directive, llmtap and reverse_proxy)
// in front of the mock server, sends streaming chat completions and one request to a dead
// upstream, and checks what the Collector's OTLP receiver got, over gRPC and over HTTP/protobuf: the GenAI histograms with their units and the
// recommended bucket boundaries, the hw.* GPU instruments, the resource from OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES, and one "chat {model}" span per request that is a child of
// Caddy's span, carries the GenAI attributes, and has a first_token event after the mock's TTFT.
func TestOTLPExport(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			rcv := startReceiver(t)
			endpoint := "http://" + rcv.httpAddr
			if proto == "grpc" {
				endpoint = "http://" + rcv.grpcAddr
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
			t.Setenv("OTEL_SERVICE_NAME", "llmtap-e2e")
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=e2e")
			site, mockAddr := runProxy(t)
			// A GPU the machine does not have, as the sampler's polls reach the exporters.
			running(t).Hub.OnGPU([]gpu.Sample{fakeGPU}, 0)
			ids := sendStreams(t, site)
			// Stopping Caddy releases the engine, which drains the record pipeline and then
			// shuts the providers down: a final export of every metric and span.
			if err := caddy.Stop(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "spans of every request and Caddy's", func() bool { return rcv.traces.SpanCount() >= 2*(streams+1) })
			waitFor(t, "metrics", func() bool { return rcv.metrics.DataPointCount() > 0 })
			checkMetrics(t, rcv.metrics.AllMetrics())
			checkSpans(t, rcv.traces.AllTraces(), ids, mockAddr)
		})
	}
}

// startMock serves the mock inference server with cfg on loopback until the test ends and
// returns its base URL.
func startMock(t *testing.T, cfg mock.Config) string {
	t.Helper()
	_, mockURL := testkit.StartMock(t, cfg)
	return mockURL
}

// runProxy loads the Caddy config and returns the site's base URL and the mock's host:port.
func runProxy(t *testing.T) (site, mockAddr string) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = mockTTFT, 2*time.Millisecond
	mockURL := startMock(t, cfg)
	admin, addr, dead := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t) // nothing listens on dead
	// A Caddyfile, as users write it: the directive order puts tracing before llmtap. The log
	// level is FATAL because the request to the dead upstream logs an error the test checks.
	caddyfile := fmt.Sprintf(`{
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
	handle /down/* {
		tracing {
			span %s
		}
		llmtap
		reverse_proxy %s
	}
	handle {
		tracing {
			span %s
		}
		llmtap
		reverse_proxy %s {
			flush_interval -1
		}
	}
}
`, admin, t.TempDir(), addr, caddySpan, dead, caddySpan, strings.TrimPrefix(mockURL, "http://"))
	testkit.StartCaddyfile(t, "otlp.Caddyfile", caddyfile)
	return "http://" + addr, strings.TrimPrefix(mockURL, "http://")
}

// sendStreams sends the streaming requests one after another (so each TTFT is the mock's, not
// queueing) and returns their request ids.
func sendStreams(t *testing.T, site string) []string {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	var ids []string
	for i := range streams {
		id := fmt.Sprintf("otlp-%d", i)
		body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me about the lighthouse keeper."}]}`, model, maxTokens)
		req, _ := http.NewRequest(http.MethodPost, site+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		events := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if bytes.HasPrefix(sc.Bytes(), []byte("data: ")) {
				events++
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || events < maxTokens {
			t.Fatalf("request %s: %s with %d events", id, resp.Status, events)
		}
		ids = append(ids, id)
	}
	// One request whose upstream does not answer: Caddy replies 502.
	req, _ := http.NewRequest(http.MethodPost, site+"/down/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[]}`))
	req.Header.Set("X-Request-Id", failedID)
	if status := doDrain(t, client, req); status != http.StatusBadGateway {
		t.Fatalf("request to a dead upstream: status %d, want 502", status)
	}
	return ids
}

// doDrain sends req, reads its response to the end and returns the status.
func doDrain(t *testing.T, client *http.Client, req *http.Request) int {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the OTLP receiver did not get %s within 15 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastMetrics returns, per metric name of llmtap's scope, the metric from the last export that
// carried it (the temporality is cumulative, so the last export holds everything), with the
// resource it came with.
func lastMetrics(t *testing.T, all []pmetric.Metrics) (map[string]pmetric.Metric, pcommon.Resource) {
	t.Helper()
	out := map[string]pmetric.Metric{}
	var res pcommon.Resource
	found := false
	for _, md := range all {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			for j := 0; j < rm.ScopeMetrics().Len(); j++ {
				sm := rm.ScopeMetrics().At(j)
				if sm.Scope().Name() != otel.ScopeName {
					continue
				}
				res, found = rm.Resource(), true
				for k := 0; k < sm.Metrics().Len(); k++ {
					m := sm.Metrics().At(k)
					out[m.Name()] = m
				}
			}
		}
	}
	if !found {
		t.Fatalf("no metrics of scope %s arrived", otel.ScopeName)
	}
	return out, res
}

func checkMetrics(t *testing.T, all []pmetric.Metrics) {
	metrics, res := lastMetrics(t, all)
	if v, _ := res.Attributes().Get("service.name"); v.Str() != "llmtap-e2e" {
		t.Errorf("resource service.name %q, want OTEL_SERVICE_NAME's llmtap-e2e", v.Str())
	}
	if v, _ := res.Attributes().Get("deployment.environment.name"); v.Str() != "e2e" {
		t.Errorf("resource lacks OTEL_RESOURCE_ATTRIBUTES: %v", res.Attributes().AsRaw())
	}
	hists := []struct {
		name, unit string
		bounds     []float64
		count      uint64
	}{
		{"gen_ai.client.operation.duration", "s", otel.DurationBuckets, streams + 1},
		{"gen_ai.server.request.duration", "s", otel.DurationBuckets, streams + 1},
		{"gen_ai.server.time_to_first_token", "s", []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}, streams},
		{"gen_ai.server.time_per_output_token", "s", []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}, streams},
		{"gen_ai.client.operation.time_to_first_chunk", "s", otel.DurationBuckets, streams},
		{"gen_ai.client.operation.time_per_output_chunk", "s", otel.DurationBuckets, streams * (maxTokens - 1)},
		{"gen_ai.client.token.usage", "{token}", []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}, 2 * streams},
	}
	errorPoints := map[string]int{}
	for _, h := range hists {
		m, ok := metrics[h.name]
		if !ok {
			t.Errorf("%s did not arrive; got %v", h.name, keys(metrics))
			continue
		}
		if m.Unit() != h.unit || m.Type() != pmetric.MetricTypeHistogram {
			t.Errorf("%s: unit %q type %v, want %q histogram", h.name, m.Unit(), m.Type(), h.unit)
			continue
		}
		var n uint64
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			n += dp.Count()
			if got := dp.ExplicitBounds().AsRaw(); !slices.Equal(got, h.bounds) {
				t.Errorf("%s: bounds %v, want %v", h.name, got, h.bounds)
			}
			attrs := dp.Attributes().AsRaw()
			if e, failed := attrs["error.type"]; failed {
				// The failed request. No upstream connection took its body, and llmtap still
				// reads the model it named (from the unsent body) before the 502 goes out.
				if e != "upstream_failure" || attrs["gen_ai.request.model"] != model || dp.Count() != 1 {
					t.Errorf("%s: failed request's data point %v (count %d), want error.type upstream_failure", h.name, attrs, dp.Count())
				}
				errorPoints[h.name]++
				continue
			}
			for k, want := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
				"gen_ai.request.model": model, "gen_ai.response.model": model, "llmtap.class": "live"} {
				if attrs[k] != want {
					t.Errorf("%s: %s = %v, want %v (all: %v)", h.name, k, attrs[k], want, attrs)
				}
			}
			if h.name == "gen_ai.server.time_to_first_token" && dp.Min() < mockTTFT.Seconds() {
				t.Errorf("TTFT min %v s is below the mock's TTFT of %v", dp.Min(), mockTTFT)
			}
		}
		if n != h.count {
			t.Errorf("%s: %d measurements, want %d", h.name, n, h.count)
		}
	}
	if errorPoints["gen_ai.client.operation.duration"] != 1 || errorPoints["gen_ai.server.request.duration"] != 1 || len(errorPoints) != 2 {
		t.Errorf("data points with error.type by metric %v, want one in each duration histogram and none elsewhere", errorPoints)
	}
	for _, g := range []struct {
		name, unit string
		want       float64
	}{
		{"hw.power", "W", 412}, {"hw.energy", "J", 98765}, {"hw.gpu.utilization", "1", 0.93},
		{"hw.gpu.memory.usage", "By", 100 << 30}, {"hw.gpu.memory.limit", "By", 141 << 30}, {"hw.temperature", "Cel", 55},
	} {
		m, ok := metrics[g.name]
		if !ok {
			t.Errorf("%s did not arrive", g.name)
			continue
		}
		if m.Unit() != g.unit {
			t.Errorf("%s unit %q, want %q", g.name, m.Unit(), g.unit)
		}
		var dps pmetric.NumberDataPointSlice
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			dps = m.Gauge().DataPoints()
		case pmetric.MetricTypeSum:
			dps = m.Sum().DataPoints()
			if g.name == "hw.energy" && !m.Sum().IsMonotonic() {
				t.Error("hw.energy arrived as a non-monotonic sum")
			}
		}
		if dps.Len() != 1 {
			t.Errorf("%s: %d data points, want 1", g.name, dps.Len())
			continue
		}
		dp := dps.At(0)
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		if v != g.want {
			t.Errorf("%s = %v, want %v", g.name, v, g.want)
		}
		if id, _ := dp.Attributes().Get("hw.id"); id.Str() != fakeGPU.UUID {
			t.Errorf("%s hw.id %q, want %q", g.name, id.Str(), fakeGPU.UUID)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func checkSpans(t *testing.T, all []ptrace.Traces, ids []string, mockAddr string) {
	mockHost, mockPort, _ := strings.Cut(mockAddr, ":")
	caddySpans := map[pcommon.SpanID]ptrace.Span{}
	ours := map[string]ptrace.Span{} // by request id
	var mu sync.Mutex
	for _, td := range all {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					s := ss.Spans().At(k)
					mu.Lock()
					if ss.Scope().Name() == otel.ScopeName {
						id, _ := s.Attributes().Get("llmtap.request_id")
						ours[id.Str()] = s
					} else if s.Name() == caddySpan {
						caddySpans[s.SpanID()] = s
					}
					mu.Unlock()
				}
			}
		}
	}
	if len(caddySpans) != len(ids)+1 {
		t.Errorf("%d spans from Caddy's tracing handler, want %d", len(caddySpans), len(ids)+1)
	}
	if s, ok := ours[failedID]; !ok {
		t.Errorf("no llmtap span for the failed request")
	} else {
		attrs := s.Attributes().AsRaw()
		if s.Status().Code() != ptrace.StatusCodeError || attrs["error.type"] != "upstream_failure" || s.Events().Len() != 0 {
			t.Errorf("failed request's span: status %v %q, error.type %v, %d events; want error, upstream_failure, none",
				s.Status().Code(), s.Status().Message(), attrs["error.type"], s.Events().Len())
		}
		if _, ok := caddySpans[s.ParentSpanID()]; !ok {
			t.Error("failed request's span is not a child of Caddy's")
		}
	}
	for _, id := range ids {
		s, ok := ours[id]
		if !ok {
			t.Errorf("no llmtap span for request %s (got %v)", id, keys(ours))
			continue
		}
		if s.Name() != "chat "+model {
			t.Errorf("%s: span name %q, want %q", id, s.Name(), "chat "+model)
		}
		if s.Kind() != ptrace.SpanKindClient {
			t.Errorf("%s: span kind %v", id, s.Kind())
		}
		parent, ok := caddySpans[s.ParentSpanID()]
		if !ok {
			t.Errorf("%s: parent %v is not one of Caddy's spans", id, s.ParentSpanID())
		} else if parent.TraceID() != s.TraceID() {
			t.Errorf("%s: trace %v, Caddy's span is in %v", id, s.TraceID(), parent.TraceID())
		} else if s.StartTimestamp() < parent.StartTimestamp() || s.EndTimestamp() > parent.EndTimestamp() {
			t.Errorf("%s: span [%v, %v] outside Caddy's [%v, %v]", id, s.StartTimestamp(), s.EndTimestamp(), parent.StartTimestamp(), parent.EndTimestamp())
		}
		attrs := s.Attributes().AsRaw()
		for k, want := range map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": model, "gen_ai.response.model": model,
			"gen_ai.usage.output_tokens": int64(maxTokens), "gen_ai.request.stream": true,
			"gen_ai.response.finish_reasons": []any{"length"}, "http.response.status_code": int64(200),
			"server.address": mockHost, "server.port": mockPort,
		} {
			if fmt.Sprint(attrs[k]) != fmt.Sprint(want) {
				t.Errorf("%s: %s = %v, want %v", id, k, attrs[k], want)
			}
		}
		if in, _ := attrs["gen_ai.usage.input_tokens"].(int64); in <= 0 {
			t.Errorf("%s: gen_ai.usage.input_tokens = %v", id, attrs["gen_ai.usage.input_tokens"])
		}
		if s.Events().Len() != 1 || s.Events().At(0).Name() != "first_token" {
			t.Errorf("%s: events %d, want one first_token", id, s.Events().Len())
			continue
		}
		ev := s.Events().At(0).Timestamp()
		ttft := time.Duration(ev - s.StartTimestamp())
		if ttft < mockTTFT || ev > s.EndTimestamp() {
			t.Errorf("%s: first_token %v after the span start (mock TTFT %v), or after its end", id, ttft, mockTTFT)
		}
		if got, _ := attrs["gen_ai.response.time_to_first_chunk"].(float64); time.Duration(got*float64(time.Second)).Round(time.Microsecond) != ttft.Round(time.Microsecond) {
			t.Errorf("%s: gen_ai.response.time_to_first_chunk %v s disagrees with the first_token event at %v", id, got, ttft)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		caddycmd.Main() // an llmtap process of TestFleetMetrics
		return
	}
	code := m.Run()
	_ = caddy.Stop()
	os.Exit(code)
}

// running returns the Process the loaded config's llmtap app holds (the app a handler
// reaches with Caddy's ctx.App).
func running(t *testing.T) *process.Process {
	t.Helper()
	a, err := caddy.ActiveContext().AppIfConfigured("llmtap")
	if err != nil {
		t.Fatalf("no llmtap app is loaded: %v", err)
	}
	return a.(*llmtap.App).Process()
}
