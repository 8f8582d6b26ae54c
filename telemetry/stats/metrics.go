package stats

import (
	"github.com/llmtap/llmtap/telemetry/record"
)

// Metric tags. They are AIPerf's tags (docs/metrics-reference.md), so a summary written by
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
	TagOutputTokenCount  = "output_token_count"
	TagReasoningTokens   = "reasoning_token_count"
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
	mITL
	mICL
	mHeaders
	mPerUser
	mE2E
	mOutputTokens
	mReasoningTokens
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
	mITL:             {tag: TagITL, header: "Inter Token Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mICL:             {tag: TagICL, header: "Inter Chunk Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros, list: true},
	mHeaders:         {tag: TagHeadersLatency, header: "Headers Latency", unit: unitMs, scale: scaleMsToMicros, max: maxMicros},
	mPerUser:         {tag: TagPerUserThroughput, header: "Output Token Throughput Per User", unit: unitTokensPerSecUser, scale: scaleThroughputMillis, max: maxMilliTokensPerSec, largerIsBetter: true},
	mE2E:             {tag: TagE2EThroughput, header: "E2E Output Token Throughput", unit: unitTokensPerSec, scale: scaleThroughputMillis, max: maxMilliTokensPerSec, largerIsBetter: true},
	mOutputTokens:    {tag: TagOutputTokenCount, header: "Output Token Count", unit: unitTokens, scale: scaleTokens, max: maxTokens},
	mReasoningTokens: {tag: TagReasoningTokens, header: "Reasoning Token Count", unit: unitTokens, scale: scaleTokens, max: maxTokens},
	mISL:             {tag: TagInputSeqLength, header: "Input Sequence Length", unit: unitTokens, scale: scaleTokens, max: maxTokens},
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

// extract computes the per-request metric values of a record, following DESIGN.md's contract:
// pointers that are nil do not apply; token counts apply when their source is known; the
// per-user throughput is 1/ITL and the end-to-end throughput is output tokens over request
// latency (AIPerf's formulas). Reasoning counts apply only to requests that reasoned, so the
// distribution describes reasoning requests instead of being diluted by zeros.
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
	if r.OutputTokensSource != record.SourceNone {
		vs.set(mOutputTokens, float64(r.OutputTokens))
		if r.RequestLatencyMs != nil && *r.RequestLatencyMs > 0 {
			vs.set(mE2E, float64(r.OutputTokens)*1000 / *r.RequestLatencyMs)
		}
	}
	if r.ReasoningTokens > 0 {
		vs.set(mReasoningTokens, float64(r.ReasoningTokens))
	}
	if r.InputTokensSource != record.SourceNone {
		vs.set(mISL, float64(r.InputTokens))
	}
	return vs
}
