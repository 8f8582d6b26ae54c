package otlp

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// Token kinds and tenants of the usage test: the mock reports 5 cached prompt tokens and 2
// reasoning tokens on every response; four requests, two of tenant "acme", one of "globex",
// one without a tenant.
const (
	usageCached    = 5
	usageReasoning = 2
	usageTokens    = 8
)

var usageTenants = []string{"acme", "acme", "globex", ""}

// TestOTLPTokenKinds sends requests of three tenants through Caddy to the mock and checks, at
// the Collector's OTLP receiver, the token metrics in both naming modes: by default the
// current GenAI histogram gen_ai.client.token.usage and llmtap.tokens per kind and tenant;
// with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental the latest experimental
// counters gen_ai.client.inference.usage.* (modality unknown, llmtap.tenant on them) and the
// per-operation histograms instead. Sums are exact: cached input, reasoning output and output
// per tenant, and llmtap.tenant.requests per tenant in both.
func TestOTLPTokenKinds(t *testing.T) {
	for _, latest := range []bool{false, true} {
		t.Run(fmt.Sprintf("latest=%v", latest), func(t *testing.T) {
			rcv := startReceiver(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.httpAddr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")
			t.Setenv("OTEL_TRACES_EXPORTER", "none")
			opt := ""
			if latest {
				opt = "http/dup," + otel.SemconvGenAILatest
			}
			t.Setenv(otel.SemconvOptInEnv, opt)
			site := runUsageProxy(t)
			sendTenantRequests(t, site)
			if err := caddy.Stop(); err != nil { // a final export of every metric
				t.Fatal(err)
			}
			waitFor(t, "metrics", func() bool { return rcv.metrics.DataPointCount() > 0 })
			metrics, _ := lastMetrics(t, rcv.metrics.AllMetrics())
			checkTokenKinds(t, metrics, latest)
		})
	}
}

// runUsageProxy loads Caddy with llmtap (tenant from X-Tenant) in front of the mock.
func runUsageProxy(t *testing.T) string {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.CachedTokens, cfg.Reasoning = time.Millisecond, time.Millisecond, usageCached, usageReasoning
	mockURL := startMock(t, cfg)
	admin, addr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	caddyfile := fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %s
}

http://%s {
	llmtap {
		tenant header X-Tenant
	}
	reverse_proxy %s
}
`, admin, t.TempDir(), addr, strings.TrimPrefix(mockURL, "http://"))
	testkit.StartCaddyfile(t, "otlp.Caddyfile", caddyfile)
	return "http://" + addr
}

func sendTenantRequests(t *testing.T, site string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	for i, tn := range usageTenants {
		body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me about the lighthouse keeper."}]}`, model, usageTokens)
		req, _ := http.NewRequest(http.MethodPost, site+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tn != "" {
			req.Header.Set("X-Tenant", tn)
		}
		if status := doDrain(t, client, req); status != http.StatusOK {
			t.Fatalf("request %d: status %d", i, status)
		}
	}
}

// sumsByTenant sums a counter's data points by llmtap.tenant ("" when absent), keeping the
// points whose attributes include want.
func sumsByTenant(t *testing.T, m pmetric.Metric, want map[string]string) map[string]float64 {
	t.Helper()
	if m.Type() != pmetric.MetricTypeSum || !m.Sum().IsMonotonic() {
		t.Fatalf("%s: type %v, want a monotonic sum (a counter)", m.Name(), m.Type())
	}
	out := map[string]float64{}
	dps := m.Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		attrs := dp.Attributes().AsRaw()
		match := true
		for k, v := range want {
			if attrs[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		tn, _ := attrs["llmtap.tenant"].(string)
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		out[tn] += v
	}
	return out
}

func checkTokenKinds(t *testing.T, metrics map[string]pmetric.Metric, latest bool) {
	t.Helper()
	get := func(name string) (pmetric.Metric, bool) {
		m, ok := metrics[name]
		if !ok {
			t.Errorf("%s did not arrive; got %v", name, keys(metrics))
		}
		return m, ok
	}
	absent := func(names ...string) {
		for _, n := range names {
			if _, ok := metrics[n]; ok {
				t.Errorf("%s arrived, but not in this mode (latest=%v)", n, latest)
			}
		}
	}
	perTenant := map[string]float64{"acme": 2, "globex": 1, "": 1}
	if m, ok := get(otel.MetricTenantRequests); ok {
		got := sumsByTenant(t, m, nil)
		for tn, n := range perTenant {
			if got[tn] != n {
				t.Errorf("%s: tenant %q %v requests, want %v (all %v)", m.Name(), tn, got[tn], n, got)
			}
		}
	}
	// kind -> tokens per request (output: usageTokens; the input is the mock's prompt count,
	// only checked to be there).
	type kind struct {
		name, llmtapType string
		each             float64
	}
	kinds := []kind{
		{otel.MetricUsageCacheRead, "cached_input", usageCached},
		{otel.MetricUsageReasoning, "reasoning_output", usageReasoning},
		{otel.MetricUsageOutput, "output", usageTokens},
	}
	if latest {
		absent(otel.MetricClientTokenUsage, otel.MetricTokens)
		for _, k := range kinds {
			m, ok := get(k.name)
			if !ok {
				continue
			}
			got := sumsByTenant(t, m, map[string]string{"gen_ai.token.modality": "unknown"})
			for tn, n := range perTenant {
				if got[tn] != n*k.each {
					t.Errorf("%s: tenant %q %v tokens, want %v (all %v)", k.name, tn, got[tn], n*k.each, got)
				}
			}
		}
		if m, ok := get(otel.MetricUsageInput); ok && sumsByTenant(t, m, nil)["acme"] <= 2*usageCached {
			t.Errorf("%s: acme's input does not include its cached tokens: %v", m.Name(), sumsByTenant(t, m, nil))
		}
		for _, name := range []string{otel.MetricOperationInputTokens, otel.MetricOperationOutput} {
			if m, ok := get(name); ok {
				var n uint64
				for i := 0; i < m.Histogram().DataPoints().Len(); i++ {
					dp := m.Histogram().DataPoints().At(i)
					n += dp.Count()
					if _, has := dp.Attributes().Get("llmtap.tenant"); has {
						t.Errorf("%s carries llmtap.tenant: a histogram must not", name)
					}
				}
				if n != uint64(len(usageTenants)) {
					t.Errorf("%s: %d measurements, want %d", name, n, len(usageTenants))
				}
			}
		}
		return
	}
	absent(otel.MetricUsageInput, otel.MetricUsageCacheRead, otel.MetricOperationInputTokens)
	if m, ok := get(otel.MetricClientTokenUsage); ok {
		for i := 0; i < m.Histogram().DataPoints().Len(); i++ {
			if _, has := m.Histogram().DataPoints().At(i).Attributes().Get("llmtap.tenant"); has {
				t.Errorf("%s carries llmtap.tenant: a histogram must not", m.Name())
			}
		}
	}
	if m, ok := get(otel.MetricTokens); ok {
		for _, k := range kinds {
			got := sumsByTenant(t, m, map[string]string{"llmtap.token.type": k.llmtapType})
			for tn, n := range perTenant {
				if got[tn] != n*k.each {
					t.Errorf("%s{%s}: tenant %q %v tokens, want %v (all %v)", m.Name(), k.llmtapType, tn, got[tn], n*k.each, got)
				}
			}
		}
	}
}
