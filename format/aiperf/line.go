package aiperf

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// This file reads the lines of profile_export.jsonl: the per-request file NVIDIA AIPerf
// writes (MetricRecordInfo: metadata, metrics as {value, unit} in display units, error) in the
// layout of Commit (metadata.request_start_ns, benchmark_phase) and in the older one of its
// example artifacts (metadata.timestamp_ns, credit_phase, metric tags ttft/ttst), and the same
// layout as llmtap bench writes it, with its record beside AIPerf's members; such lines, and
// the proxy's record files, are read as llmtap records.

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
