package otel

import (
	"context"
	"errors"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Token usage by kind, and usage per tenant.
//
// The GenAI conventions are moving token usage from the gen_ai.client.token.usage histogram
// (gen_ai.token.type input or output) to counters per kind (the semantic-conventions-genai
// repository's token-metrics.yaml: gen_ai.client.inference.usage.input_tokens, …output_tokens,
// …cache_read.input_tokens, …cache_write.input_tokens, …reasoning.output_tokens, with
// gen_ai.token.modality required, plus the per-operation histograms
// gen_ai.client.inference.operation.input_tokens and …output_tokens). As the conventions ask
// of instrumentations that shipped the older names, llmtap emits the current names by default
// and the latest experimental ones instead when OTEL_SEMCONV_STABILITY_OPT_IN holds
// "gen_ai_latest_experimental":
//
//   - default: gen_ai.client.token.usage (input, output), and llmtap.tokens, a counter of
//     every kind (llmtap.token.type input, output, cached_input, cache_write_input,
//     reasoning_output) per tenant, model and class;
//   - opt-in: the per-operation histograms instead of gen_ai.client.token.usage, and the five
//     usage counters instead of llmtap.tokens, with llmtap.tenant on them.
//
// In both, llmtap.tenant.requests counts requests per tenant, model and class; GPU time, GPU
// energy and cost go to llmtap.gpu.time, llmtap.gpu.energy and llmtap.cost. The tenant is only
// on counters, never on a latency histogram, folded by Options.Tenants.
const (
	MetricUsageInput           = "gen_ai.client.inference.usage.input_tokens"
	MetricUsageOutput          = "gen_ai.client.inference.usage.output_tokens"
	MetricUsageCacheRead       = "gen_ai.client.inference.usage.cache_read.input_tokens"
	MetricUsageCacheWrite      = "gen_ai.client.inference.usage.cache_write.input_tokens"
	MetricUsageReasoning       = "gen_ai.client.inference.usage.reasoning.output_tokens"
	MetricOperationInputTokens = "gen_ai.client.inference.operation.input_tokens"
	MetricOperationOutput      = "gen_ai.client.inference.operation.output_tokens"
	MetricTokens               = "llmtap.tokens"
	MetricTenantRequests       = "llmtap.tenant.requests"
	MetricGPUTime              = "llmtap.gpu.time"
	MetricGPUEnergyShare       = "llmtap.gpu.energy"
	MetricCost                 = "llmtap.cost"

	// SemconvOptInEnv is the variable the OTel conventions use for opting in to newer names.
	SemconvOptInEnv = "OTEL_SEMCONV_STABILITY_OPT_IN"
	// SemconvGenAILatest is the value of SemconvOptInEnv that selects the latest GenAI names.
	SemconvGenAILatest = "gen_ai_latest_experimental"

	attrModality  = "gen_ai.token.modality"
	attrTokenKind = "llmtap.token.type"
	attrBasis     = "llmtap.cost.basis"
	// modalityUnknown is the modality of every count: a server's usage does not say which
	// part of the prompt was text or image, and the conventions ask for "unknown" then.
	modalityUnknown = "unknown"
)

// LatestGenAI reports whether getenv (os.Getenv when nil) opts in to the latest experimental
// GenAI conventions: OTEL_SEMCONV_STABILITY_OPT_IN, a comma-separated list, holds
// "gen_ai_latest_experimental".
func LatestGenAI(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, v := range strings.Split(getenv(SemconvOptInEnv), ",") {
		if strings.TrimSpace(v) == SemconvGenAILatest {
			return true
		}
	}
	return false
}

// usageInstruments are the counters (and opt-in histograms) of token kinds and tenants.
type usageInstruments struct {
	latest bool

	requests, gpuTime, energy, cost metric.Float64Counter
	tokens                          metric.Int64Counter // default: llmtap.tokens
	// opt-in
	in, out, cacheRead, cacheWrite, reasoning metric.Int64Counter
	opIn, opOut                               metric.Int64Histogram
}

func newUsageInstruments(meter metric.Meter, latest bool) (usageInstruments, error) {
	u := usageInstruments{latest: latest}
	var errs []error
	fc := func(name, unit, desc string) metric.Float64Counter {
		c, err := meter.Float64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	ic := func(name, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unitTokens), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	u.requests = fc(MetricTenantRequests, "{request}", "Requests measured, by tenant (llmtap.tenant, absent when none), response model and traffic class.")
	u.gpuTime = fc(MetricGPUTime, "s", "GPU-seconds attributed to requests: each GPU sample interval's GPU time split equally among the requests in flight.")
	u.energy = fc(MetricGPUEnergyShare, "J", "GPU energy attributed to requests: each GPU sample interval's energy split equally among the requests in flight.")
	u.cost = fc(MetricCost, "1", "Cost of the requests, in the price's unit, by llmtap.cost.basis: gpu_hour (GPU-seconds at the price per GPU-hour) or list_price (tokens at the model's list prices), two figures never to be added together.")
	if !latest {
		u.tokens = ic(MetricTokens, "Tokens by llmtap.token.type: input and output (reasoning included), and the parts of them read from the prompt cache (cached_input), written to it (cache_write_input) and spent reasoning (reasoning_output).")
		return u, errors.Join(errs...)
	}
	u.in = ic(MetricUsageInput, "The number of input (prompt) tokens used, including cached tokens.")
	u.out = ic(MetricUsageOutput, "The number of output (completion) tokens used, including reasoning tokens.")
	u.cacheRead = ic(MetricUsageCacheRead, "The number of input tokens served from a provider-managed cache.")
	u.cacheWrite = ic(MetricUsageCacheWrite, "The number of input tokens written to a provider-managed cache.")
	u.reasoning = ic(MetricUsageReasoning, "The number of output tokens used for reasoning.")
	hist := func(name, desc string) metric.Int64Histogram {
		h, err := meter.Int64Histogram(name, metric.WithUnit(unitTokens), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(TokenBuckets...))
		errs = append(errs, err)
		return h
	}
	u.opIn = hist(MetricOperationInputTokens, "The number of input (prompt) tokens used per inference operation.")
	u.opOut = hist(MetricOperationOutput, "The number of output (completion) tokens used per inference operation.")
	return u, errors.Join(errs...)
}

// usageSet holds the attribute sets of one (model, class, tenant, …) for the usage
// instruments, built once.
type usageSet struct {
	counter                                        []metric.AddOption // requests, GPU, per-kind counters of the opt-in
	input, output, cached, cacheWrite, reasoningOp []metric.AddOption // llmtap.tokens by type
	costs                                          map[string][]metric.AddOption
}

func addOpts(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

// newUsageSet builds the sets from the base attributes kv (operation, provider, models, class)
// and the folded tenant.
func newUsageSet(kv []attribute.KeyValue, tenant string, latest bool) usageSet {
	base := append([]attribute.KeyValue(nil), kv...)
	if tenant != "" {
		base = append(base, attribute.String(attrTenant, tenant))
	}
	with := func(extra ...attribute.KeyValue) []metric.AddOption {
		return addOpts(append(append([]attribute.KeyValue(nil), base...), extra...)...)
	}
	s := usageSet{costs: map[string][]metric.AddOption{}}
	if latest {
		s.counter = with(attribute.String(attrModality, modalityUnknown))
	} else {
		s.counter = with()
		s.input = with(attribute.String(attrTokenKind, "input"))
		s.output = with(attribute.String(attrTokenKind, "output"))
		s.cached = with(attribute.String(attrTokenKind, "cached_input"))
		s.cacheWrite = with(attribute.String(attrTokenKind, "cache_write_input"))
		s.reasoningOp = with(attribute.String(attrTokenKind, "reasoning_output"))
	}
	for _, b := range []string{record.BasisGPUHour, record.BasisListPrice} {
		s.costs[b] = with(attribute.String(attrBasis, b))
	}
	return s
}

// consumeUsage records r into the usage instruments. set.base carries no modality; in the
// opt-in, requests and GPU counters take the plain set (s.counter less the modality would be
// a second set: the modality attribute is harmless on them and keeps one set).
func (u *usageInstruments) consume(ctx context.Context, r *record.Record, s *usageSet, hist setPair) {
	u.requests.Add(ctx, 1, s.counter...)
	if r.GPU != nil {
		u.gpuTime.Add(ctx, r.GPU.GPUSeconds, s.counter...)
		u.energy.Add(ctx, r.GPU.EnergyJ, s.counter...)
	}
	for _, c := range [...]*record.Cost{r.Cost, r.ListCost} {
		if c != nil {
			if opts, ok := s.costs[c.Basis]; ok {
				u.cost.Add(ctx, c.Total, opts...)
			}
		}
	}
	in, out := max(r.InputTokens, 0), max(r.OutputTokens, 0)
	cached, cacheWrite, reasoning := max(r.CachedTokens, 0), max(r.CacheWriteTokens, 0), max(r.ReasoningTokens, 0)
	if u.latest {
		// Every operation, failed ones included, records its counts (0 without usage).
		u.in.Add(ctx, in, s.counter...)
		u.out.Add(ctx, out, s.counter...)
		u.cacheRead.Add(ctx, cached, s.counter...)
		u.cacheWrite.Add(ctx, cacheWrite, s.counter...)
		u.reasoning.Add(ctx, reasoning, s.counter...)
		if r.InputTokensSource != record.SourceNone {
			u.opIn.Record(ctx, in, hist.base...)
		}
		if r.OutputTokensSource != record.SourceNone {
			u.opOut.Record(ctx, out, hist.base...)
		}
		return
	}
	for _, k := range [...]struct {
		n    int64
		opts []metric.AddOption
	}{{in, s.input}, {out, s.output}, {cached, s.cached}, {cacheWrite, s.cacheWrite}, {reasoning, s.reasoningOp}} {
		if k.n > 0 {
			u.tokens.Add(ctx, k.n, k.opts...)
		}
	}
}
