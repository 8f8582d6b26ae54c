package aiperf

import (
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Records summarizes the records of one traffic class as AIPerf's files count them
// (Counted: any status but 200 an error, a partial stream with content valid, a response
// without content an error), for a surface that has records but not llmtap's load generator:
// llmtap demo. Its Export is what WriteExports writes, so the demo's AIPerf-named files are the
// bench's. It is a record sink; safe for concurrent use.
type Records struct {
	class string
	slos  []stats.SLO

	mu     sync.Mutex
	agg    *stats.Aggregator
	errs   ErrorLog
	errISL *stats.Hist
}

// NewRecords returns an empty summary of the records of class, meeting slos for goodput.
func NewRecords(class string, slos []stats.SLO) *Records {
	return &Records{class: class, slos: slos, agg: stats.New(stats.Options{SLOs: slos}),
		errISL: stats.NewHist(ISLHistOptions)}
}

// Consume counts one record; records of other classes are ignored.
func (a *Records) Consume(r *record.Record) {
	if r.Class != a.class {
		return
	}
	av := Counted(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.agg.Add(av)
	if !av.OK() {
		a.errs.Add(NewErrorDetails(av, false, ""))
		if isl, ok := ErrorISL(av); ok {
			a.errISL.Record(time.Now(), isl)
		}
	}
}

// Export returns the export of what was consumed, for a run described by info that went from
// start to end.
func (a *Records) Export(info RunInfo, start, end time.Time, cancelled bool) Export {
	a.mu.Lock()
	defer a.mu.Unlock()
	others := ClassGroups(a.agg.Summary(), a.class)
	e := Export{Group: stats.Combine(others, len(a.slos) > 0), Others: others, Info: info,
		Start: start, End: end, Cancelled: cancelled, SLOs: a.slos, Errors: a.errs.Summary()}
	_, e.ErrorISL = a.errISL.Snapshot(time.Now())
	return e
}
