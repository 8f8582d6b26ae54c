package llmtap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Usage counters: what each tenant used, per model and traffic class. Only counters carry the
// tenant label, never the latency histograms, and tenants are folded by tenantLabels, so a
// series count is bounded by (tenants cap + 1) × (models cap + 1) × classes.
var (
	usageLabels = []string{"tenant", "model", "class"}

	metricTenantRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_tenant_requests_total",
		Help: "Requests measured, by tenant (empty when none), model, traffic class and status class.",
	}, append(usageLabels, "status_class"))
	metricTokensByKind = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_tokens_total",
		Help: "Tokens by tenant, model, class and type: input and output (reasoning included), and the parts of them that were cached_input (read from the prompt cache), cache_write_input (written to it) and reasoning_output. Failed requests count what they report.",
	}, append(usageLabels, "type"))
	metricGPUSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_gpu_seconds_total",
		Help: "GPU-seconds attributed to requests (each sample interval's GPU time split equally among the requests in flight), by tenant, model and class.",
	}, usageLabels)
	metricGPUEnergy = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_gpu_energy_joules_total",
		Help: "GPU energy attributed to requests (each sample interval's energy split equally among the requests in flight), by tenant, model and class.",
	}, usageLabels)
	metricCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_cost_total",
		Help: "Cost of the requests by the configured price (per GPU-hour or per-model list prices), in the price's unit, by tenant, model, class and basis.",
	}, append(usageLabels, "basis"))

	// tenantLabels bounds tenants, in length and number, with the rule of telemetry/labelcap;
	// /metrics, the OTel export and the summary share it, so they agree on which tenants have
	// series of their own. A tenant once given its series keeps it for the process's life.
	tenantLabels = labelcap.New(labelcap.DefaultMax)
)

// Token types of llmtap_tokens_total.
const (
	tokenInput       = "input"
	tokenOutput      = "output"
	tokenCachedInput = "cached_input"
	tokenCacheWrite  = "cache_write_input"
	tokenReasoning   = "reasoning_output"
)

func init() {
	collectors = append(collectors, metricTenantRequests, metricTokensByKind, metricGPUSeconds, metricGPUEnergy, metricCost)
}

// countUsage counts r in the usage counters; model is its folded model label, sc its status
// class. Runs on the record pipeline's worker.
func countUsage(r *record.Record, model, sc string) {
	tenant := tenantLabels.Get(r.Tenant)
	metricTenantRequests.WithLabelValues(tenant, model, r.Class, sc).Inc()
	for _, t := range [...]struct {
		typ string
		n   int64
	}{
		{tokenInput, r.InputTokens}, {tokenOutput, r.OutputTokens}, {tokenCachedInput, r.CachedTokens},
		{tokenCacheWrite, r.CacheWriteTokens}, {tokenReasoning, r.ReasoningTokens},
	} {
		if t.n > 0 {
			metricTokensByKind.WithLabelValues(tenant, model, r.Class, t.typ).Add(float64(t.n))
		}
	}
	if r.GPU != nil {
		metricGPUSeconds.WithLabelValues(tenant, model, r.Class).Add(r.GPU.GPUSeconds)
		metricGPUEnergy.WithLabelValues(tenant, model, r.Class).Add(r.GPU.EnergyJ)
	}
	if r.Cost != nil {
		metricCost.WithLabelValues(tenant, model, r.Class, r.Cost.Basis).Add(r.Cost.Total)
	}
}

// usageSink counts finalized records in the usage counters (engine.go registers it beside the
// request series of telemetry/promexport).
type usageSink struct{}

func (usageSink) Consume(r *record.Record) {
	model, _ := modelLabels.Label(r.Model)
	if model == "" {
		model = record.UnknownModel
	}
	countUsage(r, model, r.StatusClass())
}
