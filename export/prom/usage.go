package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// usageLabels are the labels every usage counter carries.
var usageLabels = []string{"tenant", "model", "class"}

// Token types of llmtap_tokens_total.
const (
	tokenInput       = "input"
	tokenOutput      = "output"
	tokenCachedInput = "cached_input"
	tokenCacheWrite  = "cache_write_input"
	tokenReasoning   = "reasoning_output"
)

// Usage are the usage counters: what each tenant used, per model and traffic class. Only
// counters carry the tenant label, never the latency histograms, and tenants are folded by
// the Tenants set, so a series count is bounded by (tenants cap + 1) × (models cap + 1) ×
// classes. Consume is safe for concurrent use.
type Usage struct {
	models, tenants                               *labelcap.Set
	requests, tokens, gpuSeconds, gpuEnergy, cost *prometheus.CounterVec
}

// NewUsage creates the usage counters. models bounds model names and tenants bounds tenants,
// in length and number; the host shares both with its other surfaces (/metrics, the OTel
// export, the summary) so they agree on which models and tenants have series of their own.
func NewUsage(models, tenants *labelcap.Set) *Usage {
	return &Usage{
		models: models, tenants: tenants,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_tenant_requests_total",
			Help: "Requests measured, by tenant (empty when none), model, traffic class and status class.",
		}, append(usageLabels, "status_class")),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_tokens_total",
			Help: "Tokens by tenant, model, class and type: input and output (reasoning included), and the parts of them that were cached_input (read from the prompt cache), cache_write_input (written to it) and reasoning_output. Failed requests count what they report.",
		}, append(usageLabels, "type")),
		gpuSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_gpu_seconds_total",
			Help: "GPU-seconds attributed to requests (each sample interval's GPU time split equally among the requests in flight), by tenant, model and class.",
		}, usageLabels),
		gpuEnergy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_gpu_energy_joules_total",
			Help: "GPU energy attributed to requests (each sample interval's energy split equally among the requests in flight), by tenant, model and class.",
		}, usageLabels),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmtap_cost_total",
			Help: "Cost of the requests, in the price's unit, by tenant, model, class and basis: gpu_hour (GPU-seconds at the price per GPU-hour) and list_price (tokens at the model's list prices), two figures never to be added together.",
		}, append(usageLabels, "basis")),
	}
}

// Collectors returns every usage counter, to register.
func (u *Usage) Collectors() []prometheus.Collector {
	return []prometheus.Collector{u.requests, u.tokens, u.gpuSeconds, u.gpuEnergy, u.cost}
}

// DeleteModel removes the usage series of the model label model.
func (u *Usage) DeleteModel(model string) {
	match := prometheus.Labels{"model": model}
	for _, v := range []*prometheus.CounterVec{u.requests, u.tokens, u.gpuSeconds, u.gpuEnergy, u.cost} {
		v.DeletePartialMatch(match)
	}
}

// Consume counts a finalized record in the usage counters.
func (u *Usage) Consume(r *record.Record) {
	model, _ := u.models.Label(r.Model)
	if model == "" {
		model = record.UnknownModel
	}
	tenant := u.tenants.Get(r.Tenant)
	u.requests.WithLabelValues(tenant, model, r.Class, r.StatusClass()).Inc()
	for _, t := range [...]struct {
		typ string
		n   int64
	}{
		{tokenInput, r.InputTokens}, {tokenOutput, r.OutputTokens}, {tokenCachedInput, r.CachedTokens},
		{tokenCacheWrite, r.CacheWriteTokens}, {tokenReasoning, r.ReasoningTokens},
	} {
		if t.n > 0 {
			u.tokens.WithLabelValues(tenant, model, r.Class, t.typ).Add(float64(t.n))
		}
	}
	if r.GPU != nil {
		u.gpuSeconds.WithLabelValues(tenant, model, r.Class).Add(r.GPU.GPUSeconds)
		u.gpuEnergy.WithLabelValues(tenant, model, r.Class).Add(r.GPU.EnergyJ)
	}
	for _, c := range [...]*record.Cost{r.Cost, r.ListCost} {
		if c != nil {
			u.cost.WithLabelValues(tenant, model, r.Class, c.Basis).Add(c.Total)
		}
	}
}
