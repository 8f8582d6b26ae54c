package scrape

import (
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// how says how a source series becomes a field.
type how uint8

const (
	sumScalar   how = iota // add the values of all series of a model
	maxScalar              // take the largest value
	histSum                // add the sums of a histogram's series
	asHistogram            // merge the histogram's series
)

// mapping is one row of the table in the ModelMetrics doc comment. names
// are tried in order and the first family present on the page is used, so
// an old alias is read only from servers that lack the current name.
type mapping struct {
	field ServerField
	names []string
	how   how
}

// dialect is what differs between servers.
type dialect struct {
	kind       ServerKind
	prefix     string
	modelLabel string
	rows       []mapping
}

var dialects = []dialect{
	{KindVLLM, "vllm:", "model_name", []mapping{
		{FieldKVCache, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, maxScalar},
		{FieldRunning, []string{"vllm:num_requests_running"}, sumScalar},
		{FieldWaiting, []string{"vllm:num_requests_waiting"}, sumScalar},
		{FieldPrefixHits, []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}, sumScalar},
		{FieldPrefixQueries, []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}, sumScalar},
		{FieldPromptTokens, []string{"vllm:prompt_tokens_total"}, sumScalar},
		{FieldGenerationTokens, []string{"vllm:generation_tokens_total"}, sumScalar},
		{FieldTTFT, []string{"vllm:time_to_first_token_seconds"}, asHistogram},
		{FieldITL, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, asHistogram},
		{FieldE2E, []string{"vllm:e2e_request_latency_seconds"}, asHistogram},
		{FieldQueue, []string{"vllm:request_queue_time_seconds"}, asHistogram},
		{FieldPrefill, []string{"vllm:request_prefill_time_seconds"}, asHistogram},
		{FieldDecode, []string{"vllm:request_decode_time_seconds"}, asHistogram},
	}},
	{KindSGLang, "sglang:", "model_name", []mapping{
		{FieldKVCache, []string{"sglang:token_usage"}, maxScalar},
		{FieldRunning, []string{"sglang:num_running_reqs"}, sumScalar},
		{FieldWaiting, []string{"sglang:num_queue_reqs"}, sumScalar},
		{FieldPrefixHits, []string{"sglang:cached_tokens_total"}, sumScalar},
		{FieldPrefixQueries, []string{"sglang:prompt_tokens_total"}, sumScalar},
		{FieldPromptTokens, []string{"sglang:prompt_tokens_total"}, sumScalar},
		{FieldGenerationTokens, []string{"sglang:generation_tokens_total"}, sumScalar},
		{FieldTTFT, []string{"sglang:time_to_first_token_seconds"}, asHistogram},
		{FieldITL, []string{"sglang:inter_token_latency_seconds"}, asHistogram},
		{FieldE2E, []string{"sglang:e2e_request_latency_seconds"}, asHistogram},
		{FieldQueue, []string{"sglang:queue_time_seconds"}, asHistogram},
	}},
	{KindTGI, "tgi_", "", []mapping{
		{FieldRunning, []string{"tgi_batch_current_size"}, sumScalar},
		{FieldWaiting, []string{"tgi_queue_size"}, sumScalar},
		{FieldPromptTokens, []string{"tgi_request_input_length"}, histSum},
		{FieldGenerationTokens, []string{"tgi_request_generated_tokens"}, histSum},
		{FieldITL, []string{"tgi_request_mean_time_per_token_duration"}, asHistogram},
		{FieldE2E, []string{"tgi_request_duration"}, asHistogram},
		{FieldQueue, []string{"tgi_request_queue_duration"}, asHistogram},
	}},
}

// DetectKind names the server whose prefix the most families on the page
// carry (a page can hold a few foreign series, such as a sidecar's), or
// KindUnknown when none does.
func DetectKind(fams Families) ServerKind {
	d := detect(fams)
	if d == nil {
		return KindUnknown
	}
	return d.kind
}

func detect(fams Families) *dialect {
	var best *dialect
	bestN := 0
	for i := range dialects {
		n := 0
		for name := range fams {
			if strings.HasPrefix(name, dialects[i].prefix) {
				n++
			}
		}
		if n > bestN {
			best, bestN = &dialects[i], n
		}
	}
	return best
}

// Normalize maps a parsed inference-server page to ServerMetrics, per the
// table in the ModelMetrics doc comment. Time is left zero.
func Normalize(fams Families) ServerMetrics {
	d := detect(fams)
	if d == nil {
		return ServerMetrics{}
	}
	var models []ModelMetrics
	byModel := make(map[string]int)
	model := func(m *dto.Metric) *ModelMetrics {
		name := ""
		if d.modelLabel != "" {
			name = label(m, d.modelLabel)
		}
		i, ok := byModel[name]
		if !ok {
			models = append(models, ModelMetrics{Model: name})
			i = len(models) - 1
			byModel[name] = i
		}
		return &models[i]
	}
	for _, row := range d.rows {
		var fam *dto.MetricFamily
		for _, n := range row.names {
			if fam = fams[n]; fam != nil {
				break
			}
		}
		if fam == nil {
			continue
		}
		for _, m := range fam.GetMetric() {
			apply(model(m), row, m)
		}
	}
	slices.SortFunc(models, func(a, b ModelMetrics) int { return strings.Compare(a.Model, b.Model) })
	return ServerMetrics{Kind: d.kind, Models: models}
}

// apply folds one series into mm's field.
func apply(mm *ModelMetrics, row mapping, m *dto.Metric) {
	switch row.how {
	case sumScalar, maxScalar:
		v, ok := scalar(m)
		if !ok {
			return
		}
		p := scalarField(mm, row.field)
		switch {
		case !mm.Has(row.field):
			*p = v
		case row.how == sumScalar:
			*p += v
		default:
			*p = math.Max(*p, v)
		}
	case histSum:
		h := m.GetHistogram()
		if h == nil {
			return
		}
		p := scalarField(mm, row.field)
		if mm.Has(row.field) {
			*p += h.GetSampleSum()
		} else {
			*p = h.GetSampleSum()
		}
	case asHistogram:
		h := m.GetHistogram()
		if h == nil {
			return
		}
		mergeHistogram(histField(mm, row.field), h, mm.Has(row.field))
	}
	mm.Valid |= row.field
}

func scalarField(mm *ModelMetrics, f ServerField) *float64 {
	switch f {
	case FieldKVCache:
		return &mm.KVCacheUsage
	case FieldRunning:
		return &mm.Running
	case FieldWaiting:
		return &mm.Waiting
	case FieldPrefixHits:
		return &mm.PrefixCacheHits
	case FieldPrefixQueries:
		return &mm.PrefixCacheQueries
	case FieldPromptTokens:
		return &mm.PromptTokens
	default:
		return &mm.GenerationTokens
	}
}

func histField(mm *ModelMetrics, f ServerField) *Histogram {
	switch f {
	case FieldTTFT:
		return &mm.TTFT
	case FieldITL:
		return &mm.ITL
	case FieldQueue:
		return &mm.Queue
	case FieldPrefill:
		return &mm.Prefill
	case FieldDecode:
		return &mm.Decode
	default:
		return &mm.E2E
	}
}

// mergeHistogram copies h into dst, or adds it when dst already holds a
// series (have). A series whose bounds differ from dst's cannot be added
// bucket by bucket and is skipped.
func mergeHistogram(dst *Histogram, h *dto.Histogram, have bool) {
	bs := h.GetBucket()
	if !have {
		dst.UpperBounds = make([]float64, len(bs))
		dst.Cumulative = make([]uint64, len(bs))
		for i, b := range bs {
			dst.UpperBounds[i] = b.GetUpperBound()
			dst.Cumulative[i] = b.GetCumulativeCount()
		}
		dst.Sum, dst.Count = h.GetSampleSum(), h.GetSampleCount()
		return
	}
	if len(bs) != len(dst.UpperBounds) {
		return
	}
	for i, b := range bs {
		if b.GetUpperBound() != dst.UpperBounds[i] {
			return
		}
	}
	for i, b := range bs {
		dst.Cumulative[i] += b.GetCumulativeCount()
	}
	dst.Sum += h.GetSampleSum()
	dst.Count += h.GetSampleCount()
}
