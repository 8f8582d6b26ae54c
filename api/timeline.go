package api

import (
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// Timeline is where StreamTimeline's windows come from. Implementations are safe for
// concurrent use; the windows they return are shared and must not be modified.
type Timeline interface {
	// Period is the length of one window.
	Period() time.Duration
	// Windows returns the windows that closed after the one numbered after, oldest first,
	// each with its Seq set. after 0 asks for the newest window only.
	Windows(after int64) []*llmtapv1.TimelineWindow
}

// DefaultPeriod is the timeline's window when the source does not say otherwise.
const DefaultPeriod = time.Second

// SourceStats names windows computed from the aggregator's rolling window.
const SourceStats = "stats"

// StatsTimeline makes timeline windows from a tap's statistics: each window carries the
// percentiles and rates of the aggregator's rolling window (60 s by default, its span in
// TimelineWindow.Span) at the moment the window closes. It stands in where no timeline of
// fixed windows runs (`llmtap bench`, a config without the timeline): the figures move
// smoothly rather than per second, and say so in Source and Span.
//
// A window costs a full summary of the aggregator (percentiles of every metric of every key,
// about 2 ms per model and class; see BenchmarkStatsTimelineWindow), so it is computed once per
// period and shared by every stream.
type StatsTimeline struct {
	// Tap returns the engine to read; a nil engine gives empty windows.
	Tap func() *tap.Tap
	// Every is the window period (default DefaultPeriod).
	Every time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu   sync.Mutex
	last *llmtapv1.TimelineWindow // the newest window computed, shared
	tap  *tap.Tap                 // the engine it was computed from
}

// Period returns the window period.
func (st *StatsTimeline) Period() time.Duration {
	if st.Every > 0 {
		return st.Every
	}
	return DefaultPeriod
}

// Windows returns the window that closed last, when it is newer than after. Windows are
// numbered by the period since the Unix epoch, so numbers are stable across streams.
func (st *StatsTimeline) Windows(after int64) []*llmtapv1.TimelineWindow {
	now := time.Now()
	if st.Now != nil {
		now = st.Now()
	}
	p := st.Period()
	seq := now.UnixNano() / int64(p)
	if seq <= after {
		return nil
	}
	var t *tap.Tap
	if st.Tap != nil {
		t = st.Tap()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.last != nil && st.last.Seq == seq && st.tap == t {
		return []*llmtapv1.TimelineWindow{st.last}
	}
	end := time.Unix(0, seq*int64(p))
	w := &llmtapv1.TimelineWindow{
		Seq: seq, Start: timeProto(end.Add(-p)), Duration: durationpb.New(p), Source: SourceStats,
	}
	st.last, st.tap = w, t
	if t == nil {
		return []*llmtapv1.TimelineWindow{w}
	}
	sum := t.Stats().Summary()
	var span time.Duration
	w.Series, span = seriesOf(&sum)
	w.Span = durationpb.New(span)
	w.InFlight, w.RecordsDropped = t.InFlight(), t.Dropped()
	return []*llmtapv1.TimelineWindow{w}
}

// seriesOf folds the rolling-window groups of a summary into one series per (model, class),
// in the summary's order, and returns the span they cover. Counts add up over status
// classes; the distributions are those of the group holding the most values (failed requests
// add no values, so that is the successful group).
func seriesOf(s *stats.Summary) ([]*llmtapv1.Series, time.Duration) {
	type key struct{ model, class string }
	idx := map[key]*llmtapv1.Series{}
	var out []*llmtapv1.Series
	var span time.Duration
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.Window == stats.WindowCumulative {
			continue
		}
		span = max(span, g.End.Sub(g.Start))
		k := key{g.Key.Model, g.Key.Class}
		se := idx[k]
		if se == nil {
			se = &llmtapv1.Series{Model: k.model, Class: k.class}
			idx[k] = se
			out = append(out, se)
		}
		ok, errs := int64(g.Scalars[stats.TagRequestCount].Value), int64(g.Scalars[stats.TagErrorRequestCount].Value)
		se.Requests += ok + errs
		se.Errors += errs
		for c, n := range g.Errors {
			if se.ErrorsByClass == nil {
				se.ErrorsByClass = map[string]int64{}
			}
			se.ErrorsByClass[c] += n
		}
		se.OutputTokens += g.Scalars[stats.TagTotalOSL].Value
		se.InputTokens += g.Scalars[stats.TagTotalISL].Value
		pick(&se.TtftMs, g.Metrics, stats.TagTTFT)
		pick(&se.ItlMs, g.Metrics, stats.TagITL)
	}
	if sec := span.Seconds(); sec > 0 {
		for _, se := range out {
			se.RequestRate = float64(se.Requests) / sec
			se.OutputTokenRate = se.OutputTokens / sec
			se.InputTokenRate = se.InputTokens / sec
		}
	}
	return out, span
}

// pick sets *dst to the quantiles of distribution tag of ms when it holds more values than
// *dst.
func pick(dst **llmtapv1.Quantiles, ms map[string]stats.Stat, tag string) {
	s, ok := ms[tag]
	if !ok || s.Count == 0 || (*dst != nil && (*dst).Count >= s.Count) {
		return
	}
	*dst = &llmtapv1.Quantiles{P50: s.P50, P99: s.P99, Count: s.Count}
}
