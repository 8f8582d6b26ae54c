package aiperf

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// This file writes and reads the lines of profile_export.jsonl (LinesFile). ParseLine reads the
// per-request file NVIDIA AIPerf writes (MetricRecordInfo: metadata, metrics as {value, unit}
// in display units, error) in the layout of Commit (metadata.request_start_ns,
// benchmark_phase) and in the older one of its example artifacts (metadata.timestamp_ns,
// credit_phase, metric tags ttft/ttst), and the same layout as llmtap bench writes it (Line),
// with its record beside AIPerf's members; such lines, and the proxy's record files, are read
// as llmtap records.

// aiperfLine is one line of AIPerf's profile_export.jsonl, the members the report uses.
type aiperfLine struct {
	Metadata *struct {
		XRequestID     string `json:"x_request_id"`
		XCorrelationID string `json:"x_correlation_id"`
		RequestStartNs int64  `json:"request_start_ns"`
		RequestEndNs   int64  `json:"request_end_ns"`
		TimestampNs    int64  `json:"timestamp_ns"` // the older layout's request start
		BenchmarkPhase string `json:"benchmark_phase"`
		CreditPhase    string `json:"credit_phase"` // the older layout's phase
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"metrics"`
	Error *struct {
		Code    *int   `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// num returns metric tag's value as a number (either of the tags given, the first found).
func (l *aiperfLine) num(tags ...string) (float64, bool) {
	for _, tag := range tags {
		m, ok := l.Metrics[tag]
		if !ok {
			continue
		}
		var v float64
		if json.Unmarshal(m.Value, &v) == nil {
			return v, true
		}
	}
	return 0, false
}

// toRecord converts an AIPerf line to a record of class bench (AIPerf is a benchmark client)
// and model model, or says why it cannot. Times stay in AIPerf's display unit, ms; token counts
// are AIPerf's tokenizer counts; OutputTokens is the output sequence length (reasoning
// included), the record's meaning.
func (l *aiperfLine) toRecord(model string) (*record.Record, string) {
	md := l.Metadata
	start := md.RequestStartNs
	if start == 0 {
		start = md.TimestampNs
	}
	if start <= 0 {
		return nil, "AIPerf record without a request start time"
	}
	if phase := strings.ToLower(md.BenchmarkPhase + md.CreditPhase); phase == "warmup" {
		return nil, "" // warmup: not a result
	}
	r := &record.Record{RequestID: md.XRequestID, SessionID: md.XCorrelationID, Class: record.ClassBench,
		Model: model, Start: time.Unix(0, start), Status: 200, UsageOutputTokens: -1}
	ptr := func(tags ...string) *float64 {
		if v, ok := l.num(tags...); ok {
			return &v
		}
		return nil
	}
	r.TTFTMs = ptr("time_to_first_token", "ttft")
	r.TTSTMs = ptr("time_to_second_token", "ttst")
	r.TTFOMs = ptr("time_to_first_output_token")
	r.RequestLatencyMs = ptr("request_latency")
	r.ITLMs = ptr("inter_token_latency")
	r.Stream = r.TTFTMs != nil
	if m, ok := l.Metrics["inter_chunk_latency"]; ok {
		json.Unmarshal(m.Value, &r.InterChunkMs)
	}
	if v, ok := l.num("input_sequence_length"); ok {
		r.InputTokens, r.InputTokensSource = int64(v), record.SourceTokenizer
	}
	reasoning, _ := l.num("reasoning_token_count")
	r.ReasoningTokens = int64(reasoning)
	if v, ok := l.num("output_sequence_length"); ok {
		r.OutputTokens, r.OutputTokensSource = int64(v), record.SourceTokenizer
	} else if v, ok := l.num("output_token_count"); ok {
		r.OutputTokens, r.OutputTokensSource = int64(v+reasoning), record.SourceTokenizer
	}
	switch {
	case r.RequestLatencyMs != nil:
		r.DurationMs = *r.RequestLatencyMs
	case md.RequestEndNs > start:
		r.DurationMs = float64(md.RequestEndNs-start) / 1e6
	}
	if _, failed := l.Metrics["error_request_count"]; failed && l.Error == nil {
		// AIPerf's error without details: a 200 whose response carried no content (its parser
		// kept no response), counted in error_request_count and not in error_summary.
		r.Error, r.ErrorMsg = stats.ErrNoContent, "AIPerf counted the request as an error (no content)"
	}
	if e := l.Error; e != nil {
		r.ErrorMsg = e.Message
		switch {
		case md.WasCancelled || strings.Contains(e.Type, "Cancel") || (e.Code != nil && *e.Code == 499):
			r.Error = record.ErrCanceled
		case e.Code != nil && *e.Code >= 400:
			r.Error = record.ErrHTTP
		default:
			r.Error = record.ErrUpstream
		}
		if e.Code != nil && *e.Code >= 100 && *e.Code < 600 {
			r.Status = *e.Code
		}
	}
	return r, ""
}

// recordLine is a line of a record file: a llmtap record (the proxy's, or a bench export line,
// which adds AIPerf's members and writes the record's error class as error_class, its error as
// AIPerf's object), or a line NVIDIA AIPerf wrote.
type recordLine struct {
	*record.Record
	Error      json.RawMessage `json:"error"` // a class (llmtap before AIPerf's layout), AIPerf's object, or null
	ErrorClass *string         `json:"error_class"`
	// Metrics are AIPerf's members of a bench export line: request_count or
	// error_request_count say how the run's own summary counted the request.
	Metrics map[string]json.RawMessage `json:"metrics"`
}

// ParseLine reads one line of a record file: a llmtap record (old or new layout) or a
// line NVIDIA AIPerf wrote (its records get model model); fromAIPerf says which. A nil record is
// a line to skip, for the reason why ("" for one that is not a result, such as warmup).
func ParseLine(line []byte, model string) (r *record.Record, fromAIPerf bool, why string) {
	l := recordLine{Record: new(record.Record)}
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, false, "not a record: " + err.Error()
	}
	r = l.Record
	switch {
	case !r.Start.IsZero():
		// llmtap's record: the error class is error_class, or the error itself before.
		if l.ErrorClass != nil {
			r.Error = *l.ErrorClass
		} else if len(l.Error) > 0 && l.Error[0] == '"' {
			json.Unmarshal(l.Error, &r.Error)
		}
		aiperfVerdict(r, l.Metrics)
	default:
		var a aiperfLine
		if json.Unmarshal(line, &a) != nil || a.Metadata == nil {
			return nil, false, "record without a start time"
		}
		if r, why = a.toRecord(model); r == nil {
			return nil, false, why
		}
		fromAIPerf = true
	}
	if r.Class == "" {
		r.Class = record.ClassLive
	}
	return r, fromAIPerf, ""
}

// aiperfVerdict makes a bench export line's record count as the run's own summary counted it:
// the line's AIPerf members follow AIPerf's rules (docs/metrics.md, "Which requests count"),
// under which a stream with content before an error event is valid and a status other than
// 200 an error, so that a report of the run shows the counts its profile_export_aiperf.json
// and console table show. Records without AIPerf's members (the proxy's) keep their own.
func aiperfVerdict(r *record.Record, metrics map[string]json.RawMessage) {
	_, valid := metrics["request_count"]
	_, failed := metrics["error_request_count"]
	switch {
	case valid && !r.OK():
		r.Error, r.ErrorMsg = "", ""
	case failed && r.OK():
		r.Error = record.ErrHTTP // a status AIPerf fails and llmtap does not: 2xx other than 200, 3xx
		if r.Status == 0 || r.Status == 200 {
			r.Error = stats.ErrNoContent
		}
	}
}

// Line is one line of profile_export.jsonl: AIPerf's MetricRecordInfo (metadata,
// metrics, error; see Commit), with the per-request record exactly
// as the proxy writes it and what only the load generator knows (the schedule) as extra
// members, which AIPerf's models allow. The record's own "error" (its error class) is written
// as error_class: AIPerf's error member is an object or null.
type Line struct {
	*record.Record
	N                  int           `json:"n"`
	SessionID          string        `json:"session_id,omitempty"`
	Intended           time.Time     `json:"intended"`
	ScheduleLagMs      float64       `json:"schedule_lag_ms"`
	QueueWaitMs        float64       `json:"queue_wait_ms"`
	EffectiveLatencyMs float64       `json:"effective_latency_ms"`
	WasCancelled       bool          `json:"was_cancelled"`
	SendError          string        `json:"send_error,omitempty"`
	ErrorClass         string        `json:"error_class"`
	Error              *ErrorDetails `json:"error"`
	Metadata           LineMeta      `json:"metadata"`
	Metrics            LineMetrics   `json:"metrics"`
}

// LineMeta is AIPerf's MetricRecordMetadata. Every member it requires is written; the ids
// AIPerf's distributed workers have are the writer's (llmtap's one process: "llmtap").
type LineMeta struct {
	SessionNum         int     `json:"session_num"`
	XRequestID         string  `json:"x_request_id"`
	XCorrelationID     *string `json:"x_correlation_id"`
	ConversationID     *string `json:"conversation_id"`
	TurnIndex          *int    `json:"turn_index"`
	RequestStartNs     int64   `json:"request_start_ns"`
	RequestAckNs       *int64  `json:"request_ack_ns"`
	RequestEndNs       int64   `json:"request_end_ns"`
	WorkerID           string  `json:"worker_id"`
	RecordProcessorID  string  `json:"record_processor_id"`
	BenchmarkPhase     string  `json:"benchmark_phase"`
	WasCancelled       bool    `json:"was_cancelled"`
	CancellationTimeNs *int64  `json:"cancellation_time_ns"`
}

// valueUnit is AIPerf's MetricValue {value, unit} of one per-request metric.
type valueUnit struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// nsUnit is a MetricValue holding a wall-clock timestamp in ns, an integer too large for a
// float64 to keep exactly.
type nsUnit struct {
	Value int64  `json:"value"`
	Unit  string `json:"unit"`
}

// listUnit is a MetricValue holding a list (inter_chunk_latency).
type listUnit struct {
	Value []float64 `json:"value"`
	Unit  string    `json:"unit"`
}

// LineMetrics is AIPerf's per-request metrics object: the record's figures under AIPerf's
// tags, absent where they do not apply (a failed request has only error_request_count), the
// values stats.Each gives, so they are the summary's. A struct rather than a map (one fewer
// map to build and sort per line); the fields are in the tags' alphabetical order, the order
// encoding/json writes a map in, so the line is the same either way.
type LineMetrics struct {
	DecodeDuration       *valueUnit `json:"decode_duration,omitempty"`
	E2EThroughput        *valueUnit `json:"e2e_output_token_throughput,omitempty"`
	EffectiveLatency     *valueUnit `json:"effective_latency,omitempty"`
	ErrorISL             *valueUnit `json:"error_isl,omitempty"`
	ErrorRequestCount    *valueUnit `json:"error_request_count,omitempty"`
	InputSequenceLength  *valueUnit `json:"input_sequence_length,omitempty"`
	InterChunkLatency    *listUnit  `json:"inter_chunk_latency,omitempty"`
	InterTokenLatency    *valueUnit `json:"inter_token_latency,omitempty"`
	MaxResponseTimestamp *nsUnit    `json:"max_response_timestamp,omitempty"`
	MinRequestTimestamp  *nsUnit    `json:"min_request_timestamp,omitempty"`
	OutputSequenceLength *valueUnit `json:"output_sequence_length,omitempty"`
	OutputTokenCount     *valueUnit `json:"output_token_count,omitempty"`
	PerUserThroughput    *valueUnit `json:"output_token_throughput_per_user,omitempty"`
	PrefillPerUser       *valueUnit `json:"prefill_throughput_per_user,omitempty"`
	ReasoningTokenCount  *valueUnit `json:"reasoning_token_count,omitempty"`
	RequestCount         *valueUnit `json:"request_count,omitempty"`
	RequestLatency       *valueUnit `json:"request_latency,omitempty"`
	TimeToFirstOutput    *valueUnit `json:"time_to_first_output_token,omitempty"`
	TimeToFirstToken     *valueUnit `json:"time_to_first_token,omitempty"`
	TimeToSecondToken    *valueUnit `json:"time_to_second_token,omitempty"`

	values [16]valueUnit // backing store, so that a line allocates its metrics once
	used   int
	ns     [2]nsUnit
	icl    listUnit
}

func (m *LineMetrics) put(v float64, unit string) *valueUnit {
	p := &m.values[m.used]
	m.used++
	*p = valueUnit{v, unit}
	return p
}

// Fill sets the metrics of record r, whose effective latency is effectiveMs, for a request
// that started at startNs and ended at endNs (wall clock).
func (m *LineMetrics) Fill(r *record.Record, effectiveMs float64, startNs, endNs int64) {
	m.EffectiveLatency = m.put(effectiveMs, "ms")
	if !r.OK() {
		m.ErrorRequestCount = m.put(1, "requests")
		if isl, ok := ErrorISL(r); ok {
			m.ErrorISL = m.put(isl, "tokens")
		}
		return
	}
	m.RequestCount = m.put(1, "requests")
	m.ns = [2]nsUnit{{startNs, "ns"}, {endNs, "ns"}}
	m.MinRequestTimestamp, m.MaxResponseTimestamp = &m.ns[0], &m.ns[1]
	if len(r.InterChunkMs) > 0 {
		m.icl = listUnit{r.InterChunkMs, "ms"}
		m.InterChunkLatency = &m.icl
	}
	stats.Each(r, func(tag, unit string, v float64) {
		var f **valueUnit
		switch tag {
		case stats.TagTTFT:
			f = &m.TimeToFirstToken
		case stats.TagTTST:
			f = &m.TimeToSecondToken
		case stats.TagTTFO:
			f = &m.TimeToFirstOutput
		case stats.TagRequestLatency:
			f = &m.RequestLatency
		case stats.TagDecodeDuration:
			f = &m.DecodeDuration
		case stats.TagITL:
			f = &m.InterTokenLatency
		case stats.TagPerUserThroughput:
			f = &m.PerUserThroughput
		case stats.TagPrefillPerUser:
			f = &m.PrefillPerUser
		case stats.TagE2EThroughput:
			f = &m.E2EThroughput
		case stats.TagOutputTokenCount:
			f = &m.OutputTokenCount
		case stats.TagReasoningTokens:
			f = &m.ReasoningTokenCount
		case stats.TagOutputSeqLength:
			f = &m.OutputSequenceLength
		case stats.TagInputSeqLength:
			f = &m.InputSequenceLength
		default:
			return // headers_latency: the line's metadata has it as request_ack_ns
		}
		*f = m.put(v, unit)
	})
}

// ConcatLines writes out/profile_export.jsonl as the lines of every dir's, in turn, and returns
// its path.
func ConcatLines(dirs []string, out string) (string, error) {
	p := filepath.Join(out, LinesFile)
	return p, WriteFile(p, func(w io.Writer) error {
		for _, d := range dirs {
			f, err := os.Open(filepath.Join(d, LinesFile))
			if err != nil {
				return err
			}
			_, err = io.Copy(w, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
}
