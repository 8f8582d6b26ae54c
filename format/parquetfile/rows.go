package parquetfile

import (
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// RecordRow is one request record (telemetry/record.Record) as a Parquet row: the JSONL
// record's fields under the same names, with null where the JSONL record has null, leaves the
// field out, or writes a stand-in for "unknown" (usage_output_tokens -1, a token count without a
// source, status 0). docs/parquet.md lists every column with its type and unit.
type RecordRow struct {
	RequestID string    `parquet:"request_id"`
	Class     string    `parquet:"class"`
	Model     string    `parquet:"model"`
	Path      string    `parquet:"path"`
	API       string    `parquet:"api"`
	Stream    bool      `parquet:"stream"`
	Status    *int32    `parquet:"status,optional"`
	Error     string    `parquet:"error"`
	ErrorMsg  *string   `parquet:"error_message,optional"`
	Finish    *string   `parquet:"finish_reason,optional"`
	Start     time.Time `parquet:"start,timestamp(nanosecond)"`
	SessionID *string   `parquet:"session_id,optional"`
	Tenant    *string   `parquet:"tenant,optional"`

	HeadersMs         *float64  `parquet:"headers_ms,optional"`
	TTFTMs            *float64  `parquet:"ttft_ms,optional"`
	TTFOMs            *float64  `parquet:"ttfo_ms,optional"`
	TTSTMs            *float64  `parquet:"ttst_ms,optional"`
	RequestLatencyMs  *float64  `parquet:"request_latency_ms,optional"`
	ITLMs             *float64  `parquet:"itl_ms,optional"`
	InterChunkMs      []float64 `parquet:"inter_chunk_ms,optional,list"`
	InterChunkDropped *int64    `parquet:"inter_chunk_dropped,optional"`
	DurationMs        float64   `parquet:"duration_ms"`

	InputTokens        *int64  `parquet:"input_tokens,optional"`
	InputTokensSource  *string `parquet:"input_tokens_source,optional"`
	OutputTokens       *int64  `parquet:"output_tokens,optional"`
	OutputTokensSource *string `parquet:"output_tokens_source,optional"`
	ReasoningTokens    int64   `parquet:"reasoning_tokens"`
	CachedTokens       int64   `parquet:"cached_tokens"`
	CacheWriteTokens   *int64  `parquet:"cache_write_tokens,optional"`
	UsageOutputTokens  *int64  `parquet:"usage_output_tokens,optional"`
	Tokenizer          *string `parquet:"tokenizer,optional"`

	GPU      *GPURow    `parquet:"gpu,optional"`
	Cost     *CostRow   `parquet:"cost,optional"`
	ListCost *CostRow   `parquet:"list_cost,optional"`
	Server   *ServerRow `parquet:"server_timings,optional"`
	Split    *SplitRow  `parquet:"time_split,optional"`

	ContentEvents   int64   `parquet:"content_events"`
	Events          int64   `parquet:"events"`
	Malformed       *int64  `parquet:"malformed_events,optional"`
	Oversized       *int64  `parquet:"oversized_events,optional"`
	Choices         *int64  `parquet:"choices,optional"`
	ToolCalls       *bool   `parquet:"tool_calls,optional"`
	Refusal         *bool   `parquet:"refusal,optional"`
	Bytes           int64   `parquet:"bytes"`
	BytesFromClient *int64  `parquet:"bytes_from_client,optional"`
	DecodedBytes    *int64  `parquet:"decoded_bytes,optional"`
	DecodeStopped   *string `parquet:"decode_stopped,optional"`
	UsageInjection  *string `parquet:"usage_injection,optional"`
}

// GPURow is record.GPUUsage.
type GPURow struct {
	UtilPercent float64 `parquet:"util_percent"`
	PowerW      float64 `parquet:"power_w"`
	EnergyJ     float64 `parquet:"energy_j"`
	GPUSeconds  float64 `parquet:"gpu_seconds"`
	CoveredMs   float64 `parquet:"covered_ms"`
	GPUs        int64   `parquet:"gpus"`
}

// CostRow is record.Cost.
type CostRow struct {
	Total            float64 `parquet:"total"`
	PerMillionTokens float64 `parquet:"per_million_tokens"`
	Basis            string  `parquet:"basis"`
}

// ServerRow is record.ServerTimings.
type ServerRow struct {
	Format          *string  `parquet:"format,optional"`
	QueueMs         *float64 `parquet:"queue_ms,optional"`
	InferenceMs     *float64 `parquet:"inference_ms,optional"`
	PromptEvalCount int64    `parquet:"prompt_eval_count"`
	EvalCount       int64    `parquet:"eval_count"`
	LoadMs          float64  `parquet:"load_ms"`
	PromptEvalMs    float64  `parquet:"prompt_eval_ms"`
	EvalMs          float64  `parquet:"eval_ms"`
	TotalMs         float64  `parquet:"total_ms"`
}

// SplitRow is record.TimeSplit.
type SplitRow struct {
	ConnectMs         *float64 `parquet:"connect_ms,optional"`
	ProxyMs           *float64 `parquet:"proxy_ms,optional"`
	SendMs            *float64 `parquet:"send_ms,optional"`
	UpstreamHeadersMs *float64 `parquet:"upstream_headers_ms,optional"`
	UpstreamTTFTMs    *float64 `parquet:"upstream_ttft_ms,optional"`
	QueueMs           *float64 `parquet:"queue_ms,optional"`
	QueueSource       *string  `parquet:"queue_source,optional"`
	LoadMs            *float64 `parquet:"load_ms,optional"`
	PrefillMs         *float64 `parquet:"prefill_ms,optional"`
	PrefillSource     *string  `parquet:"prefill_source,optional"`
	DecodeMs          *float64 `parquet:"decode_ms,optional"`
	DecodeSource      *string  `parquet:"decode_source,optional"`
	InferenceMs       *float64 `parquet:"inference_ms,optional"`
	ServerTTFTMs      *float64 `parquet:"server_ttft_ms,optional"`
	NetworkMs         *float64 `parquet:"network_ms,optional"`
	TTFTDisagree      *bool    `parquet:"ttft_disagree,optional"`
}

// TraceRow is one line of a Mooncake trace (what the recorder's trace JSONL holds) as a
// Parquet row, with the request's absolute arrival beside the offset.
type TraceRow struct {
	// Start is the request's arrival, UTC, in nanoseconds: what partitions and merges order by.
	Start time.Time `parquet:"start,timestamp(nanosecond)"`
	// Timestamp is the arrival in milliseconds from the file's start (its "llmtap.start"
	// metadata), microsecond precision, as the JSONL trace's "timestamp".
	Timestamp    float64 `parquet:"timestamp"`
	InputLength  int64   `parquet:"input_length"`
	OutputLength int64   `parquet:"output_length"`
	HashIDs      []int64 `parquet:"hash_ids,list"`
	SessionID    *string `parquet:"session_id,optional"`
	// Delay is a later turn's think time in milliseconds; null for a first turn or a turn
	// whose previous one the recorder did not see.
	Delay  *float64 `parquet:"delay,optional"`
	Model  *string  `parquet:"model,optional"`
	Tenant *string  `parquet:"tenant,optional"`
}

// opt is v, or nil (a null cell) for the zero value of its type.
func opt[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func num[T int64 | float64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}

func flag(p *bool) bool { return p != nil && *p }

// count is a token count as a column: null when nothing counted it (no source and 0).
func count(v int64, source string) *int64 {
	if source == record.SourceNone && v == 0 {
		return nil
	}
	return &v
}

// FromRecord returns r as a row. The row shares r's slices and float pointers.
func FromRecord(r *record.Record) RecordRow {
	row := RecordRow{
		RequestID: r.RequestID, Class: r.Class, Model: r.Model, Path: r.Path, API: r.API,
		Stream: r.Stream, Error: r.Error, ErrorMsg: opt(r.ErrorMsg), Finish: opt(r.Finish),
		Start: r.Start.UTC(), SessionID: opt(r.SessionID), Tenant: opt(r.Tenant),

		HeadersMs: r.HeadersMs, TTFTMs: r.TTFTMs, TTFOMs: r.TTFOMs, TTSTMs: r.TTSTMs,
		RequestLatencyMs: r.RequestLatencyMs, ITLMs: r.ITLMs, InterChunkMs: r.InterChunkMs,
		InterChunkDropped: opt(int64(r.InterChunkDropped)), DurationMs: r.DurationMs,

		InputTokens: count(r.InputTokens, r.InputTokensSource), InputTokensSource: opt(r.InputTokensSource),
		OutputTokens: count(r.OutputTokens, r.OutputTokensSource), OutputTokensSource: opt(r.OutputTokensSource),
		ReasoningTokens: r.ReasoningTokens, CachedTokens: r.CachedTokens,
		CacheWriteTokens: opt(r.CacheWriteTokens), Tokenizer: opt(r.Tokenizer),

		ContentEvents: int64(r.ContentEvents), Events: int64(r.Events),
		Malformed: opt(int64(r.Malformed)), Oversized: opt(int64(r.Oversized)),
		Choices: opt(int64(r.Choices)), ToolCalls: opt(r.ToolCalls), Refusal: opt(r.Refusal),
		Bytes: r.Bytes, BytesFromClient: opt(r.BytesFromClient), DecodedBytes: opt(r.DecodedBytes),
		DecodeStopped: opt(r.DecodeStopped), UsageInjection: opt(r.UsageInjection),
	}
	if r.Status != 0 {
		s := int32(r.Status)
		row.Status = &s
	}
	if r.UsageOutputTokens >= 0 {
		v := r.UsageOutputTokens
		row.UsageOutputTokens = &v
	}
	if g := r.GPU; g != nil {
		row.GPU = &GPURow{g.UtilPercent, g.PowerW, g.EnergyJ, g.GPUSeconds, g.CoveredMs, int64(g.GPUs)}
	}
	row.Cost, row.ListCost = costRow(r.Cost), costRow(r.ListCost)
	if s := r.Server; s != nil {
		row.Server = &ServerRow{opt(s.Format), opt(s.QueueMs), opt(s.InferenceMs), s.PromptEvalCount,
			s.EvalCount, s.LoadMs, s.PromptEvalMs, s.EvalMs, s.TotalMs}
	}
	if s := r.Split; s != nil {
		row.Split = &SplitRow{s.ConnectMs, s.ProxyMs, s.SendMs, s.UpstreamHeadersMs, s.UpstreamTTFTMs,
			s.QueueMs, opt(s.QueueSource), s.LoadMs, s.PrefillMs, opt(s.PrefillSource), s.DecodeMs,
			opt(s.DecodeSource), s.InferenceMs, s.ServerTTFTMs, s.NetworkMs, opt(s.TTFTDisagree)}
	}
	return row
}

func costRow(c *record.Cost) *CostRow {
	if c == nil {
		return nil
	}
	return &CostRow{c.Total, c.PerMillionTokens, c.Basis}
}

func cost(c *CostRow) *record.Cost {
	if c == nil {
		return nil
	}
	return &record.Cost{Total: c.Total, PerMillionTokens: c.PerMillionTokens, Basis: c.Basis}
}

// Record returns the row as a record: the record FromRecord was given, as its JSON reads back.
func (row *RecordRow) Record() *record.Record {
	r := &record.Record{
		RequestID: row.RequestID, Class: row.Class, Model: row.Model, Path: row.Path, API: row.API,
		Stream: row.Stream, Error: row.Error, ErrorMsg: str(row.ErrorMsg), Finish: str(row.Finish),
		Start: row.Start, SessionID: str(row.SessionID), Tenant: str(row.Tenant),

		HeadersMs: row.HeadersMs, TTFTMs: row.TTFTMs, TTFOMs: row.TTFOMs, TTSTMs: row.TTSTMs,
		RequestLatencyMs: row.RequestLatencyMs, ITLMs: row.ITLMs, InterChunkMs: row.InterChunkMs,
		InterChunkDropped: int(num(row.InterChunkDropped)), DurationMs: row.DurationMs,

		InputTokens: num(row.InputTokens), InputTokensSource: str(row.InputTokensSource),
		OutputTokens: num(row.OutputTokens), OutputTokensSource: str(row.OutputTokensSource),
		ReasoningTokens: row.ReasoningTokens, CachedTokens: row.CachedTokens,
		CacheWriteTokens: num(row.CacheWriteTokens), UsageOutputTokens: -1, Tokenizer: str(row.Tokenizer),

		Cost: cost(row.Cost), ListCost: cost(row.ListCost),

		ContentEvents: int(row.ContentEvents), Events: int(row.Events),
		Malformed: int(num(row.Malformed)), Oversized: int(num(row.Oversized)),
		Choices: int(num(row.Choices)), ToolCalls: flag(row.ToolCalls), Refusal: flag(row.Refusal),
		Bytes: row.Bytes, BytesFromClient: num(row.BytesFromClient), DecodedBytes: num(row.DecodedBytes),
		DecodeStopped: str(row.DecodeStopped), UsageInjection: str(row.UsageInjection),
	}
	if row.Status != nil {
		r.Status = int(*row.Status)
	}
	if row.UsageOutputTokens != nil {
		r.UsageOutputTokens = *row.UsageOutputTokens
	}
	if g := row.GPU; g != nil {
		r.GPU = &record.GPUUsage{UtilPercent: g.UtilPercent, PowerW: g.PowerW, EnergyJ: g.EnergyJ,
			GPUSeconds: g.GPUSeconds, CoveredMs: g.CoveredMs, GPUs: int(g.GPUs)}
	}
	if s := row.Server; s != nil {
		r.Server = &record.ServerTimings{Format: str(s.Format), QueueMs: num(s.QueueMs), InferenceMs: num(s.InferenceMs),
			PromptEvalCount: s.PromptEvalCount, EvalCount: s.EvalCount, LoadMs: s.LoadMs,
			PromptEvalMs: s.PromptEvalMs, EvalMs: s.EvalMs, TotalMs: s.TotalMs}
	}
	if s := row.Split; s != nil {
		r.Split = &record.TimeSplit{ConnectMs: s.ConnectMs, ProxyMs: s.ProxyMs, SendMs: s.SendMs,
			UpstreamHeadersMs: s.UpstreamHeadersMs, UpstreamTTFTMs: s.UpstreamTTFTMs, QueueMs: s.QueueMs,
			QueueSource: str(s.QueueSource), LoadMs: s.LoadMs, PrefillMs: s.PrefillMs,
			PrefillSource: str(s.PrefillSource), DecodeMs: s.DecodeMs, DecodeSource: str(s.DecodeSource),
			InferenceMs: s.InferenceMs, ServerTTFTMs: s.ServerTTFTMs, NetworkMs: s.NetworkMs,
			TTFTDisagree: flag(s.TTFTDisagree)}
	}
	return r
}

// TraceFields are what a trace row holds of a request, apart from its times.
type TraceFields struct {
	InputLength, OutputLength int64
	HashIDs                   []int64
	SessionID, Model, Tenant  string
	// Delay is the think time before a later turn; HasDelay says whether there is one.
	Delay    time.Duration
	HasDelay bool
}

// NewTraceRow returns the trace row of a request that arrived at start, in a file that
// started at fileStart. Times are rounded to microseconds as the JSONL trace writes them.
func NewTraceRow(start, fileStart time.Time, f TraceFields) TraceRow {
	row := TraceRow{
		Start: start.UTC(), Timestamp: ms(start.Sub(fileStart)),
		InputLength: max(f.InputLength, 0), OutputLength: max(f.OutputLength, 0), HashIDs: f.HashIDs,
		SessionID: opt(f.SessionID), Tenant: opt(f.Tenant),
	}
	if f.Model != record.UnknownModel {
		row.Model = opt(f.Model)
	}
	if f.SessionID != "" && f.HasDelay {
		d := ms(f.Delay)
		row.Delay = &d
	}
	return row
}

// ms is d in milliseconds with microsecond precision; a negative d is 0 (as the JSONL).
func ms(d time.Duration) float64 { return float64(max(d, 0).Microseconds()) / 1000 }
