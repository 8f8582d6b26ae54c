package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// This file reads the files NVIDIA AIPerf writes (github.com/ai-dynamo/aiperf): the
// per-request profile_export.jsonl (MetricRecordInfo: metadata, metrics as {value, unit} in
// display units, error) in the layout of commit db4f6397 (metadata.request_start_ns,
// benchmark_phase) and in the older one of its example artifacts (metadata.timestamp_ns,
// credit_phase, metric tags ttft/ttst), and profile_export_aiperf.json (metrics as top-level
// members, or under records{} in the older layout) for the run's model. llmtap bench writes
// the same layout with its record beside AIPerf's members; such lines are read as llmtap
// records.

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

// aiperfSummary is the part of profile_export_aiperf.json the report reads, in both layouts.
type aiperfSummary struct {
	InputConfig *struct {
		Endpoint struct {
			ModelNames json.RawMessage `json:"model_names"`
		} `json:"endpoint"`
	} `json:"input_config"`
	Records map[string]json.RawMessage `json:"records"` // the older layout
	// RequestCount is request_count of either layout.
	RequestCount *struct {
		Avg float64 `json:"avg"`
	} `json:"request_count"`
}

// readAIPerfSummary reads the model name (the first of input_config.endpoint.model_names)
// and the valid request count of an AIPerf summary beside the records, if there is one.
func readAIPerfSummary(dir string) (model string, requests float64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if os.IsNotExist(err) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	var s aiperfSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return "", 0, false, fmt.Errorf("%s: %w", filepath.Join(dir, "profile_export_aiperf.json"), err)
	}
	if s.InputConfig != nil {
		var names []string
		if json.Unmarshal(s.InputConfig.Endpoint.ModelNames, &names) == nil && len(names) > 0 {
			model = names[0]
		} else {
			json.Unmarshal(s.InputConfig.Endpoint.ModelNames, &model) // a single name
		}
	}
	if rc, found := s.Records["request_count"]; found {
		var m struct {
			Avg float64 `json:"avg"`
		}
		json.Unmarshal(rc, &m)
		return model, m.Avg, true, nil
	}
	if s.RequestCount != nil {
		return model, s.RequestCount.Avg, true, nil
	}
	return model, 0, true, nil
}
