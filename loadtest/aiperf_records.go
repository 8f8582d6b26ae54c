package loadtest

import (
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// AIPerfRecords summarizes the records of one traffic class as AIPerf's files count them
// (AIPerfRecord: any status but 200 an error, a partial stream with content valid, a response
// without content an error), for a surface that has records but not llmtap's load generator:
// llmtap demo. Its Export is what WriteExports writes, so the demo's AIPerf-named files are the
// bench's. It is a record sink; safe for concurrent use.
type AIPerfRecords struct {
	class string
	slos  []stats.SLO

	mu     sync.Mutex
	agg    *stats.Aggregator
	errs   errorLog
	errISL *stats.Hist
}

// NewAIPerfRecords returns an empty summary of the records of class, meeting slos for goodput.
func NewAIPerfRecords(class string, slos []stats.SLO) *AIPerfRecords {
	return &AIPerfRecords{class: class, slos: slos, agg: stats.New(stats.Options{SLOs: slos}),
		errISL: stats.NewHist(islHistOptions)}
}

// Consume counts one record; records of other classes are ignored.
func (a *AIPerfRecords) Consume(r *record.Record) {
	if r.Class != a.class {
		return
	}
	av := AIPerfRecord(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.agg.Add(av)
	if !av.OK() {
		a.errs.add(newErrorDetails(av, false, ""))
		if isl, ok := errorISL(av); ok {
			a.errISL.Record(time.Now(), isl)
		}
	}
}

// Export returns the export of what was consumed, for a run described by info that went from
// start to end.
func (a *AIPerfRecords) Export(info RunInfo, start, end time.Time, cancelled bool) Export {
	a.mu.Lock()
	defer a.mu.Unlock()
	others := ClassGroups(a.agg.Summary(), a.class)
	e := Export{Group: stats.Combine(others, len(a.slos) > 0), Others: others, Info: info,
		Start: start, End: end, Cancelled: cancelled, SLOs: a.slos, Errors: a.errs.summary()}
	_, e.ErrorISL = a.errISL.Snapshot(time.Now())
	return e
}
