package loadtest

import (
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// AIPerfCommit is the AIPerf commit whose export models llmtap's AIPerf-named files follow
// (github.com/ai-dynamo/aiperf, 2025-10-10): aiperf/common/models/record_models.py
// (MetricRecordInfo, MetricRecordMetadata, MetricValue), error_models.py (ErrorDetails,
// ErrorDetailsCount), export_models.py (JsonExportData, JsonMetricResult) and
// aiperf/exporters/csv_exporter.py. docs/metrics.md lists the metric meanings.
const AIPerfCommit = "db4f6397d11ee2d4cfbb41f70b2327315163dcf0"

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

// newErrorDetails describes a failed record; sendErr is the client's own error, if any.
func newErrorDetails(r *record.Record, cancelled bool, sendErr string) *ErrorDetails {
	if r.OK() {
		return nil
	}
	class := r.Error
	d := &ErrorDetails{Type: &class, Message: r.ErrorMsg}
	code := r.Status
	if cancelled {
		// As AIPerf reports a request it cancelled on purpose; the transport's own words
		// (a deadline) say nothing more.
		code, d.Message = cancelledCode, "Request was cancelled by --request-cancellation-rate"
	}
	if code >= 400 {
		d.Code = &code
	}
	if d.Message == "" {
		d.Message = sendErr
	}
	if d.Message == "" {
		switch {
		case r.Status >= 400:
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

// ErrorCount is AIPerf's ErrorDetailsCount, an entry of error_summary.
type ErrorCount struct {
	Details ErrorDetails `json:"error_details"`
	Count   int64        `json:"count"`
}

// maxErrorKinds bounds the distinct errors error_summary keeps; further kinds are counted
// under one entry of type "other".
const maxErrorKinds = 32

// errorLog counts failed requests by their details, bounded.
type errorLog struct {
	byKey map[string]*ErrorCount
	order []string
	other int64
}

func (l *errorLog) add(d *ErrorDetails) { l.addN(d, 1) }

// addN counts n failures with details d.
func (l *errorLog) addN(d *ErrorDetails, n int64) {
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

// summary is error_summary: most frequent first, then in order of first occurrence.
func (l *errorLog) summary() []ErrorCount {
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

// noContent reports whether a record succeeded at the HTTP level yet carried no generated
// content, which AIPerf does not count as a valid request (its record has no responses).
func noContent(r *record.Record) bool {
	return r.OK() && r.ContentEvents == 0 && r.OutputTokens <= 0
}

// asInvalid returns a copy of a no-content record marked as the error AIPerf makes of it.
func asInvalid(r *record.Record) *record.Record {
	c := *r
	c.Error, c.ErrorMsg = stats.ErrNoContent, "the response carried no generated content"
	return &c
}
