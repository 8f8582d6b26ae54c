package bench

import (
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// MaxTimeslices bounds how many slices a run keeps (each is an aggregator of its own):
// records that start past the last one are left out of the timeslice export, and said so.
const MaxTimeslices = 1000

// slicer summarizes a run's records by timeslice, as AIPerf's --slice-duration does
// (MetricsAccumulator at ai-dynamo/aiperf 2026): slice i holds the requests that started in
// [origin + i·d, origin + (i+1)·d), where the origin is the run's first request's start (here
// the moment the first request was handed to the client, a few microseconds before the
// record's start stamp), and each slice is summarized from the same records, with the same
// aggregator and rules, as the whole run. The collector's lock guards it; a nil slicer does
// nothing.
type slicer struct {
	d       time.Duration
	slos    []stats.SLO
	origin  time.Time
	aggs    []*stats.Aggregator
	end     time.Time // the last response's end
	dropped int64     // records past MaxTimeslices
}

func newSlicer(d time.Duration, slos []stats.SLO) *slicer { return &slicer{d: d, slos: slos} }

// begin notes a request about to be sent: the first one sets the origin.
func (s *slicer) begin() {
	if s != nil && s.origin.IsZero() {
		s.origin = time.Now()
	}
}

// add files a record that the run's summary counted; now stands for its start when the record
// has none (a request that could not be built or sent).
func (s *slicer) add(r *record.Record, now time.Time) {
	if s == nil {
		return
	}
	start := r.Start
	if start.IsZero() {
		start = now
	}
	if s.origin.IsZero() || start.Before(s.origin) {
		s.origin = start // not expected: begin comes first
	}
	i := int(start.Sub(s.origin) / s.d)
	if i >= MaxTimeslices {
		s.dropped++
		return
	}
	for len(s.aggs) <= i {
		s.aggs = append(s.aggs, nil)
	}
	if s.aggs[i] == nil {
		s.aggs[i] = stats.New(stats.Options{SLOs: s.slos})
	}
	s.aggs[i].Add(r)
	if end := start.Add(time.Duration(r.DurationMs * float64(time.Millisecond))); end.After(s.end) {
		s.end = end
	}
}

// slices returns the slices, every one from the first to the last that holds a request: the
// last ends at the last response's end and is incomplete when that is before its full length.
func (s *slicer) slices(class string) []aiperf.Timeslice {
	out := make([]aiperf.Timeslice, len(s.aggs))
	for i, a := range s.aggs {
		ts := &out[i]
		ts.Start = s.origin.Add(time.Duration(i) * s.d)
		ts.End, ts.Complete = ts.Start.Add(s.d), true
		if i == len(s.aggs)-1 && s.end.Before(ts.End) {
			ts.End, ts.Complete = s.end, false
		}
		if a != nil {
			g := stats.Combine(aiperf.ClassGroups(a.Summary(), class), len(s.slos) > 0)
			ts.Group = &g
		}
	}
	return out
}
