// Package aiperf owns the files of NVIDIA AIPerf's layout (github.com/ai-dynamo/aiperf) that
// llmtap writes and reads: the summary profile_export_aiperf.json and .csv (Export,
// WriteExports), the per-request profile_export.jsonl (Line to write, ParseLine to read),
// inputs.json (Inputs), the timeslice, aggregate and sweep-aggregate files (WriteTimeslices,
// WriteAggregate, WriteSweepAggregate), the error details and counting rules of AIPerf
// (ErrorDetails, ErrorLog, Counted), and the one reader of AIPerf summaries (ReadSummary,
// ParseSummary), which `llmtap report` and the aggregates share. The summaries themselves come
// from telemetry/stats; the statistics across runs that only AIPerf's aggregate files hold
// (AggregateRuns, its confidence intervals, and the sweep's best and Pareto-optimal values) are
// computed here, by AIPerf's definitions, beside the files they define.
package aiperf

import (
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Commit is the AIPerf commit whose export models llmtap's AIPerf-named files follow
// (github.com/ai-dynamo/aiperf, 2025-10-10): aiperf/common/models/record_models.py
// (MetricRecordInfo, MetricRecordMetadata, MetricValue), error_models.py (ErrorDetails,
// ErrorDetailsCount), export_models.py (JsonExportData, JsonMetricResult) and
// aiperf/exporters/csv_exporter.py. docs/metrics.md lists the metric meanings.
const Commit = "db4f6397d11ee2d4cfbb41f70b2327315163dcf0"

// ErrorDetails is AIPerf's ErrorDetails: a code (the HTTP status, or 499 for a request the
// client cancelled, as AIPerf writes it), a type (llmtap's error class) and a message.
type ErrorDetails struct {
	Code    *int    `json:"code"`
	Type    *string `json:"type"`
	Message string  `json:"message"`
}

// maxErrorMessage bounds an error message in the exports, in bytes.
const maxErrorMessage = 512

// cancelledCode is the code AIPerf gives a request it cancelled (nginx's "client closed
// request").
const cancelledCode = 499

// NewErrorDetails is AIPerf's error member of a record r as AIPerf sees it (Counted);
// sendErr is the client's own error, if any. It is nil for a valid record and also for a
// response without content: AIPerf counts that one as an error, but its record carries no
// error details (Commit's inference_result_parser.py returns it with no responses and
// no error), so it is in error_request_count and not in error_summary.
func NewErrorDetails(r *record.Record, cancelled bool, sendErr string) *ErrorDetails {
	if r.OK() || r.Error == stats.ErrNoContent {
		return nil
	}
	class := r.Error
	d := &ErrorDetails{Type: &class, Message: r.ErrorMsg}
	code := r.Status
	switch {
	case cancelled:
		// As AIPerf reports a request it cancelled on purpose; the transport's own words
		// (a deadline) say nothing more.
		code, d.Message = cancelledCode, "Request was cancelled by --request-cancellation-rate"
		d.Code = &code
	case statusError(r):
		// AIPerf's aiohttp client: any status but 200 is an error, with the status as its code
		// and the reason phrase as its type.
		d.Code = &code
		if reason := http.StatusText(code); reason != "" {
			d.Type = &reason
		}
	}
	if d.Message == "" {
		d.Message = sendErr
	}
	if d.Message == "" {
		switch {
		case statusError(r):
			d.Message = "HTTP " + strconv.Itoa(r.Status) + " " + http.StatusText(r.Status)
		default:
			d.Message = class
		}
	}
	if len(d.Message) > maxErrorMessage {
		cut := maxErrorMessage
		for cut > 0 && !utf8.RuneStart(d.Message[cut]) {
			cut--
		}
		d.Message = d.Message[:cut] + "…"
	}
	return d
}

// statusError reports whether AIPerf's client fails r on its status: a status was received and
// it is not 200.
func statusError(r *record.Record) bool { return r.Status != 0 && r.Status != http.StatusOK }

// ErrorCount is AIPerf's ErrorDetailsCount, an entry of error_summary.
type ErrorCount struct {
	Details ErrorDetails `json:"error_details"`
	Count   int64        `json:"count"`
}

// maxErrorKinds bounds the distinct errors error_summary keeps; further kinds are counted
// under one entry of type "other".
const maxErrorKinds = 32

// ErrorLog counts failed requests by their details, bounded.
type ErrorLog struct {
	byKey map[string]*ErrorCount
	order []string
	other int64
}

// Add counts one failure with details d; nil details count nothing.
func (l *ErrorLog) Add(d *ErrorDetails) { l.AddN(d, 1) }

// AddN counts n failures with details d.
func (l *ErrorLog) AddN(d *ErrorDetails, n int64) {
	if d == nil || n <= 0 {
		return
	}
	code := -1
	if d.Code != nil {
		code = *d.Code
	}
	typ := ""
	if d.Type != nil {
		typ = *d.Type
	}
	key := strconv.Itoa(code) + "\x00" + typ + "\x00" + d.Message
	if e := l.byKey[key]; e != nil {
		e.Count += n
		return
	}
	if len(l.order) >= maxErrorKinds {
		l.other += n
		return
	}
	if l.byKey == nil {
		l.byKey = map[string]*ErrorCount{}
	}
	l.byKey[key] = &ErrorCount{Details: *d, Count: n}
	l.order = append(l.order, key)
}

// Summary is error_summary: most frequent first, then in order of first occurrence.
func (l *ErrorLog) Summary() []ErrorCount {
	out := make([]ErrorCount, 0, len(l.order)+1)
	for _, k := range l.order {
		out = append(out, *l.byKey[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if l.other > 0 {
		typ := "other"
		out = append(out, ErrorCount{Details: ErrorDetails{Type: &typ,
			Message: "further distinct errors, beyond the " + strconv.Itoa(maxErrorKinds) + " listed"}, Count: l.other})
	}
	return out
}

// hasContent reports whether a record carried generated content: AIPerf's parser keeps a
// response only when it has text, reasoning or a tool call's text.
func hasContent(r *record.Record) bool { return r.ContentEvents > 0 || r.OutputTokens > 0 }

// Counted returns record r as AIPerf's files count it, which is not always as llmtap's
// records do (docs/metrics.md, "Which requests count"). At Commit (aiohttp_client.py,
// inference_result_parser.py, openai_parsers.py, record_models.py's valid):
//
//   - any status but 200 is an error, 2xx and 3xx included (llmtap: 400 and above);
//   - a 200 whose body was read to its end is valid when it carried content, whatever else the
//     stream held: an error event, an event that is not JSON and a stream that stops before
//     [DONE] are skipped by the parser, and the content before them counts (llmtap: errors of
//     class stream_error, malformed, truncated);
//   - a 200 without content is an error (no responses), with no error details;
//   - a transport failure (reset, timeout) or a cancellation is an error, as in llmtap.
//
// r itself is never changed: the result is r or a copy, and the record written beside AIPerf's
// members keeps llmtap's own verdict.
func Counted(r *record.Record) *record.Record {
	switch {
	case r.Error == record.ErrCanceled || r.Error == record.ErrUpstream:
		return r
	case statusError(r):
		if r.OK() {
			c := *r
			c.Error = record.ErrHTTP
			return &c
		}
		return r
	case !hasContent(r):
		if r.Error != "" && r.Error != record.ErrStream && r.Error != record.ErrMalformed && r.Error != record.ErrTruncated {
			return r
		}
		c := *r
		c.Error, c.ErrorMsg = stats.ErrNoContent, "the response carried no generated content"
		return &c
	case r.Error == record.ErrStream || r.Error == record.ErrMalformed || r.Error == record.ErrTruncated:
		c := *r
		c.Error, c.ErrorMsg = "", ""
		return &c
	}
	return r
}

// ISLHistOptions hold input sequence lengths, in tokens.
var ISLHistOptions = stats.HistOptions{Unit: "tokens", Scale: 1, Max: 1<<24 - 1}

// ErrorISL is AIPerf's error_isl of a failed request: its input sequence length, when known.
func ErrorISL(r *record.Record) (float64, bool) {
	if r.InputTokens <= 0 || r.InputTokensSource == "" {
		return 0, false
	}
	return float64(r.InputTokens), true
}
