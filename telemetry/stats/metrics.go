package stats

import (
	"github.com/llmtap/llmtap/telemetry/record"
)

// Metric tags. They are AIPerf's tags (AIPerf's docs/metrics-reference.md), so a summary written by
// llmtap reads like profile_export_aiperf.json; headers_latency is llmtap's own.
const (
	TagTTFT              = "time_to_first_token"
	TagTTST              = "time_to_second_token"
	TagTTFO              = "time_to_first_output_token"
	TagRequestLatency    = "request_latency"
	TagITL               = "inter_token_latency"
	TagICL               = "inter_chunk_latency"
	TagHeadersLatency    = "headers_latency"
	TagPerUserThroughput = "output_token_throughput_per_user"
	TagE2EThroughput     = "e2e_output_token_throughput"
	TagDecodeDuration    = "decode_duration"
	TagPrefillPerUser    = "prefill_throughput_per_user"
	TagOutputTokenCount  = "output_token_count"
	TagReasoningTokens   = "reasoning_token_count"
	TagOutputSeqLength   = "output_sequence_length"
	TagInputSeqLength    = "input_sequence_length"
	TagRequestThroughput = "request_throughput"
	TagOutputThroughput  = "output_token_throughput"
	TagTotalThroughput   = "total_token_throughput"
	TagRequestCount      = "request_count"
	TagErrorRequestCount = "error_request_count"
	TagGoodRequestCount  = "good_request_count"
	TagGoodput           = "goodput"
	TagGoodRequestFrac   = "good_request_fraction"
	TagTotalOutputTokens = "total_output_tokens"
	TagTotalOSL          = "total_osl"
	TagTotalISL          = "total_isl"
	TagTotalReasoning    = "total_reasoning_tokens"
	TagBenchmarkDuration = "benchmark_duration"
	// llmtap's energy figures, present when GPU sampling gave the records an energy share.
	TagGPUEnergy            = "gpu_energy"
	TagTokensPerJoule       = "output_tokens_per_joule"
	TagJoulesPerOutputToken = "joules_per_output_token"
)

// Display units (AIPerf's names) and histogram ranges.
const (
	unitMs                = "ms"
	unitTokens            = "tokens"
	unitTokensPerSec      = "tokens/sec"
	unitTokensPerSecUser  = "tokens/sec/user"
	unitRequests          = "requests"
	unitRequestsPerSec    = "requests/sec"
	unitRatio             = "ratio"
	unitSec               = "sec"
	unitJoules            = "J"
	unitTokensPerJoule    = "tokens/J"
	unitJoulesPerToken    = "J/token"
	maxMicros             = int64(3600 * 1e6) // one hour in µs: the longest time a histogram resolves
	maxTokens             = int64(1<<24 - 1)  // 16.7 M tokens: beyond every context window in use
	maxMilliTokensPerSec  = int64(1e9)        // 1 M tokens/s in milli-tokens/s
	scaleMsToMicros       = 1000.0            // histograms of times hold µs; summaries show ms
	scaleTokens           = 1.0               // token counts are recorded as they are
	scaleThroughputMillis = 1000.0            // throughputs are recorded in thousandths so 0.5 tok/s keeps 3 digits
)

// metric identifies a distribution metric: one histogram per key and metric.
type metric int

const (
	mTTFT metric = iota
	mTTST
	mTTFO
	mRequestLatency
	mDecode
	mITL
	mICL
	mHeaders
	mPerUser
	mPrefillPerUser
	mE2E
	mOutputTokens
	mReasoningTokens
	mOSL
	mISL
	numMetrics
)

// metricSpec describes how one distribution metric is recorded and shown. A value v in the
// display unit is recorded in the histogram as the integer round(v*scale), clamped to
// [0, max]; summaries divide by scale again.
type metricSpec struct {
	tag    string
	header string // AIPerf's console header, without the unit
	unit   string
	scale  float64
	max    int64
	// largerIsBetter flips the SLO comparison to ≥ (AIPerf's LARGER_IS_BETTER flag).
	largerIsBetter bool
	// list marks a metric with several values per request; no SLO can apply to it.
	list bool
	pool *histPool
}

// specs is the catalog in the order summaries, tables and CSV files list the metrics
// (AIPerf's console order, llmtap's own metric after the latencies).
var specs = [numMetrics]metricSpec{
	mTTFT:            {tag: TagTTFT, header: "Time to First Token", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mTTST:            {tag: TagTTST, header: "Time to Second Token", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mTTFO:            {tag: TagTTFO, header: "Time to First Output Token", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mRequestLatency:  {tag: TagRequestLatency, header: "Request Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mDecode:          {tag: TagDecodeDuration, header: "Decode Duration", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mITL:             {tag: TagITL, header: "Inter Token Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mICL:             {tag: TagICL, header: "Inter Chunk Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros, list: true},
	mHeaders:         {tag: TagHeadersLatency, header: "Headers Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mPerUser:         {tag: TagPerUserThroughput, header: "Output Token Throughput Per User", unit: unitTokensPerSecUser, scale: scaleThroughputMillis, max: maxMilliTokensPerSec, largerIsBetter: true},
	mPrefillPerUser:  {tag: TagPrefillPerUser, header: "Prefill Throughput Per User", unit: unitTokensPerSecUser, scale: scaleThroughputMillis, max: maxMilliTokensPerSec, largerIsBetter: true},
	mE2E:             {tag: TagE2EThroughput, header: "E2E Output Token Throughput", unit: unitTokensPerSec, scale: scaleThroughputMillis, max: maxMilliTokensPerSec, largerIsBetter: true},
	mOutputTokens:    {tag: TagOutputTokenCount, header: "Output Token Count", unit: unitTokens, scale: scaleTokens, max: maxTokens, largerIsBetter: true},
	mReasoningTokens: {tag: TagReasoningTokens, header: "Reasoning Token Count", unit: unitTokens, scale: scaleTokens, max: maxTokens, largerIsBetter: true},
	mOSL:             {tag: TagOutputSeqLength, header: "Output Sequence Length", unit: unitTokens, scale: scaleTokens, max: maxTokens, largerIsBetter: true},
	mISL:             {tag: TagInputSeqLength, header: "Input Sequence Length", unit: unitTokens, scale: scaleTokens, max: maxTokens, largerIsBetter: true},
}

func init() {
	// Histograms of one range share a pool of scratch and released histograms.
	pools := map[int64]*histPool{}
	for i := range specs {
		p := pools[specs[i].max]
		if p == nil {
			p = newHistPool(specs[i].max)
			pools[specs[i].max] = p
		}
		specs[i].pool = p
	}
}

// metricByTag finds a distribution metric by its tag.
func metricByTag(tag string) (metric, bool) {
	for i := range specs {
		if specs[i].tag == tag {
			return metric(i), true
		}
	}
	return 0, false
}

// scalarSpec describes a single-value metric of a summary.
type scalarSpec struct {
	tag, header, unit string
}

// scalars lists the single-value metrics in the order summaries show them.
var scalars = []scalarSpec{
	{TagRequestThroughput, "Request Throughput", unitRequestsPerSec},
	{TagOutputThroughput, "Output Token Throughput", unitTokensPerSec},
	{TagTotalThroughput, "Total Token Throughput", unitTokensPerSec},
	{TagGoodput, "Goodput", unitRequestsPerSec},
	{TagRequestCount, "Request Count", unitRequests},
	{TagErrorRequestCount, "Error Request Count", unitRequests},
	{TagGoodRequestCount, "Good Request Count", unitRequests},
	{TagGoodRequestFrac, "Good Request Fraction", unitRatio},
	{TagTotalOutputTokens, "Total Output Tokens", unitTokens},
	{TagTotalOSL, "Total Output Sequence Length", unitTokens},
	{TagTotalISL, "Total Input Sequence Length", unitTokens},
	{TagTotalReasoning, "Total Reasoning Tokens", unitTokens},
	{TagBenchmarkDuration, "Benchmark Duration", unitSec},
	{TagGPUEnergy, "GPU Energy", unitJoules},
	{TagTokensPerJoule, "Output Tokens Per Joule", unitTokensPerJoule},
	{TagJoulesPerOutputToken, "Joules Per Output Token", unitJoulesPerToken},
}

// values holds the per-request values of the single-valued distribution metrics of one
// record; has marks which apply. Inter-chunk gaps stay in the record.
type values struct {
	v   [numMetrics]float64
	has [numMetrics]bool
}

func (vs *values) set(m metric, v float64) { vs.v[m], vs.has[m] = v, true }

func (vs *values) setPtr(m metric, p *float64) {
	if p != nil {
		vs.set(m, *p)
	}
}

// extract computes the per-request metric values of a record, following the metric contract
// and AIPerf's metric classes (docs/metrics.md lists them tag by tag): pointers that are nil do
// not apply; token counts apply when their source is known. The record's OutputTokens is
// AIPerf's output sequence length (all generated tokens, reasoning included);
// output_token_count is the part that is not reasoning and, as in AIPerf, has no value when it
// is zero; reasoning_token_count applies only to requests that reasoned. The per-user
// throughput is 1/ITL, the prefill throughput per user ISL/TTFT, the decode duration request
// latency − TTFT and the end-to-end throughput OSL over request latency (AIPerf's formulas).
func extract(r *record.Record) (vs values) {
	vs.setPtr(mTTFT, r.TTFTMs)
	vs.setPtr(mTTST, r.TTSTMs)
	vs.setPtr(mTTFO, r.TTFOMs)
	vs.setPtr(mRequestLatency, r.RequestLatencyMs)
	vs.setPtr(mITL, r.ITLMs)
	vs.setPtr(mHeaders, r.HeadersMs)
	if r.ITLMs != nil && *r.ITLMs > 0 {
		vs.set(mPerUser, 1000 / *r.ITLMs)
	}
	if r.TTFTMs != nil && r.RequestLatencyMs != nil {
		vs.set(mDecode, max(*r.RequestLatencyMs-*r.TTFTMs, 0))
	}
	if r.OutputTokensSource != record.SourceNone {
		osl := max(r.OutputTokens, 0)
		vs.set(mOSL, float64(osl))
		if out := OutputTokenCount(r); out > 0 {
			vs.set(mOutputTokens, float64(out))
		}
		if r.RequestLatencyMs != nil && *r.RequestLatencyMs > 0 {
			vs.set(mE2E, float64(osl)*1000 / *r.RequestLatencyMs)
		}
	}
	if r.ReasoningTokens > 0 {
		vs.set(mReasoningTokens, float64(r.ReasoningTokens))
	}
	if r.InputTokensSource != record.SourceNone {
		vs.set(mISL, float64(r.InputTokens))
		if r.TTFTMs != nil && *r.TTFTMs > 0 {
			vs.set(mPrefillPerUser, float64(r.InputTokens)*1000 / *r.TTFTMs)
		}
	}
	return vs
}

// OutputTokenCount is AIPerf's output_token_count of a record: the generated tokens that are
// not reasoning, never negative. The record's OutputTokens (AIPerf's output_sequence_length,
// and the GenAI conventions' output tokens) includes the reasoning.
func OutputTokenCount(r *record.Record) int64 {
	return max(r.OutputTokens-max(r.ReasoningTokens, 0), 0)
}

// Each calls fn with every single-valued per-request metric of r that has a value, by tag and
// display unit, in the catalog's order: the values a summary's distributions take from r, so
// per-request exports show the same numbers. A failed record has none. The inter-chunk gaps
// (a list) are left to the caller, in r.InterChunkMs.
func Each(r *record.Record, fn func(tag, unit string, v float64)) {
	if !r.OK() {
		return
	}
	vs := extract(r)
	for m := range numMetrics {
		if vs.has[m] {
			fn(specs[m].tag, specs[m].unit, vs.v[m])
		}
	}
}
