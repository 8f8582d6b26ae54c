package otel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// ScopeName is the instrumentation scope of llmtap's meters and tracers.
const ScopeName = "github.com/llmtap/llmtap"

// maxAttrSets bounds the cache of attribute sets; past it, sets are built per record.
const maxAttrSets = 4096

// Options configures Metrics. The zero value is usable.
type Options struct {
	// Models bounds the values of gen_ai.request.model and gen_ai.response.model, in length
	// and number, with the rule of telemetry/labelcap (the first labelcap.DefaultMax models
	// keep their own values for good, later ones are "_other", long names are shortened with
	// a hash suffix); an empty model is "_unknown". Share one Set with the other consumers of
	// the same records (llmtap shares /metrics' set) so they agree. Default: a Set of its own
	// with labelcap.DefaultMax.
	Models *labelcap.Set
	// Tenants bounds the values of llmtap.tenant, on the counters only, the same way. Share
	// /metrics' set. Default: a Set of its own with labelcap.DefaultMax.
	Tenants *labelcap.Set
	// LatestGenAI emits the latest experimental GenAI token metrics instead of the current
	// ones (see usage.go); FromEnv's callers set it from LatestGenAI(os.Getenv).
	LatestGenAI bool
	// GPU, when not nil, returns the latest sample of every GPU, appended to dst; the hw.*
	// instruments call it once per collection. Nil means no GPU instruments.
	GPU func(dst []gpu.Sample) []gpu.Sample
}

// Metrics records finished request records into the GenAI histograms. It is a pipeline Sink:
// Consume runs on the record pipeline's one worker goroutine, never on the request path, and
// is not safe for concurrent use.
type Metrics struct {
	opts Options

	opDuration  metric.Float64Histogram
	reqDuration metric.Float64Histogram
	ttft        metric.Float64Histogram
	tpot        metric.Float64Histogram
	ttfc        metric.Float64Histogram
	tpoc        metric.Float64Histogram
	tokens      metric.Int64Histogram // nil with LatestGenAI
	usage       usageInstruments

	sets map[setKey]setPair
	gpu  metric.Registration
}

type setKey struct {
	api, reqModel, model, class, errType, tenant string
}

// setPair holds the record options of one attribute set, as slices built once: passing a
// single option to Record would allocate its variadic slice on every call.
type setPair struct {
	base, input, output []metric.RecordOption
	usage               *usageSet
}

// NewMetrics creates the GenAI instruments (and the GPU ones when opts.GPU is set) on a meter
// of mp. Close unregisters the GPU callback.
func NewMetrics(mp metric.MeterProvider, opts Options) (*Metrics, error) {
	meter := mp.Meter(ScopeName)
	if opts.Models == nil {
		opts.Models = labelcap.New(labelcap.DefaultMax)
	}
	if opts.Tenants == nil {
		opts.Tenants = labelcap.New(labelcap.DefaultMax)
	}
	m := &Metrics{opts: opts, sets: make(map[setKey]setPair)}
	var errs []error
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit(unitSeconds), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	m.opDuration = hist(MetricClientOperationDuration,
		"Time from the request reaching llmtap until its response was complete (every request, failed ones with error.type).", DurationBuckets)
	m.reqDuration = hist(MetricServerRequestDuration,
		"Time from the request reaching llmtap to its last content event (streams) or the end of its body (non-streaming).", DurationBuckets)
	m.ttft = hist(MetricServerTimeToFirstToken,
		"Time from the request reaching llmtap to the first content event of the response (successful streams).", TTFTBuckets)
	m.tpot = hist(MetricServerTimePerOutputToken,
		"(request duration - time to first token) / (output tokens - 1), for successful streams of two tokens or more.", TPOTBuckets)
	m.ttfc = hist(MetricClientTimeToFirstChunk,
		"Time from the request reaching llmtap to the first content chunk it passed on (successful streams).", DurationBuckets)
	m.tpoc = hist(MetricClientTimePerOutputChunk,
		"Time between consecutive content chunks of a successful stream, one measurement per chunk after the first.", DurationBuckets)
	if !opts.LatestGenAI {
		tok, err := meter.Int64Histogram(MetricClientTokenUsage, metric.WithUnit(unitTokens),
			metric.WithDescription("Tokens per request by gen_ai.token.type; from the server's usage when sent, else counted by llmtap's tokenizer."),
			metric.WithExplicitBucketBoundaries(TokenBuckets...))
		errs = append(errs, err)
		m.tokens = tok
	}
	u, err := newUsageInstruments(meter, opts.LatestGenAI)
	errs = append(errs, err)
	m.usage = u
	if opts.GPU != nil {
		reg, err := registerGPU(meter, opts.GPU)
		errs = append(errs, err)
		m.gpu = reg
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("creating OpenTelemetry instruments: %w", err)
	}
	return m, nil
}

// Consume records r: operation duration for every request; request duration, time to first
// token/chunk, time per output token/chunk and token usage for successful ones (failed requests
// count in the duration histograms under their error.type).
func (m *Metrics) Consume(r *record.Record) {
	ctx := context.Background()
	set := m.attrs(r)
	m.opDuration.Record(ctx, r.DurationMs/1000, set.base...)
	m.usage.consume(ctx, r, set.usage, set) // usage.go: counters by kind and tenant
	if !r.OK() {
		m.reqDuration.Record(ctx, r.DurationMs/1000, set.base...)
		return
	}
	if r.RequestLatencyMs != nil {
		m.reqDuration.Record(ctx, *r.RequestLatencyMs/1000, set.base...)
	} else {
		m.reqDuration.Record(ctx, r.DurationMs/1000, set.base...)
	}
	if r.TTFTMs != nil {
		m.ttft.Record(ctx, *r.TTFTMs/1000, set.base...)
		m.ttfc.Record(ctx, *r.TTFTMs/1000, set.base...)
	}
	if r.ITLMs != nil {
		m.tpot.Record(ctx, *r.ITLMs/1000, set.base...)
	}
	for _, gap := range r.InterChunkMs {
		m.tpoc.Record(ctx, gap/1000, set.base...)
	}
	if m.tokens == nil {
		return
	}
	if r.InputTokensSource != record.SourceNone {
		m.tokens.Record(ctx, r.InputTokens, set.input...)
	}
	if r.OutputTokensSource != record.SourceNone {
		m.tokens.Record(ctx, r.OutputTokens, set.output...)
	}
}

// Close unregisters the GPU callback; as a pipeline sink (a pipeline.Closer) it is closed with
// the pipeline. The meter provider's owner shuts the provider down.
func (m *Metrics) Close(context.Context) error {
	if m.gpu != nil {
		return m.gpu.Unregister()
	}
	return nil
}

func (m *Metrics) modelLabel(model string) string {
	model, _ = m.opts.Models.Label(model)
	if model == "" {
		return defaultModel
	}
	return model
}

// requestModel is the model the request named, or the record's model when the request body
// was not read.
func requestModel(r *record.Record) string {
	if r.RequestModel != "" {
		return r.RequestModel
	}
	return r.Model
}

// attrs returns the attribute sets of r, cached per (api, model, class, error): building a set
// sorts and allocates, and a process sees few distinct combinations.
func (m *Metrics) attrs(r *record.Record) setPair {
	model, reqModel := m.modelLabel(r.Model), m.modelLabel(requestModel(r))
	tenant := m.opts.Tenants.Get(r.Tenant)
	k := setKey{api: r.API, reqModel: reqModel, model: model, class: r.Class, errType: r.Error, tenant: tenant}
	if p, ok := m.sets[k]; ok {
		return p
	}
	kv := []attribute.KeyValue{
		attribute.String(attrOperation, Operation(r.API)),
		attribute.String(attrProvider, Provider(r.API)),
		attribute.String(attrRequestModel, reqModel),
		attribute.String(attrResponseModel, model),
		attribute.String(attrClass, r.Class),
	}
	if r.Error != "" {
		kv = append(kv, attribute.String(attrErrorType, r.Error))
	}
	with := func(extra ...attribute.KeyValue) []metric.RecordOption {
		set := attribute.NewSet(append(append([]attribute.KeyValue(nil), kv...), extra...)...)
		return []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	us := newUsageSet(kv, tenant, m.opts.LatestGenAI)
	p := setPair{
		base:   with(),
		input:  with(attribute.String(attrTokenType, "input")),
		output: with(attribute.String(attrTokenType, "output")),
		usage:  &us,
	}
	if len(m.sets) < maxAttrSets {
		m.sets[k] = p
	}
	return p
}
