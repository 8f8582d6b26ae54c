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

// StatsTimeline makes timeline windows from a tap's statistics. It stands in where no timeline
// of fixed windows runs (`llmtap bench`, a config without the timeline), and says so in
// Source. Counts and rates are those of the window: the change in the aggregator's cumulative
// counts since the previous window it computed, over the time between the two (the window's
// Start and Duration; a stream that asked for no window for a while gets one longer window).
// The first window, which has no previous one, carries the counts and rates of the
// aggregator's rolling window (60 s by default), and its Start and Duration are that span.
// Percentiles are always those of the rolling window, whose span is in TimelineWindow.Span:
// they move smoothly rather than per window.
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
	cum  map[seriesKey]cumCounts  // the engine's cumulative counts at last's end
}

// seriesKey names a series.
type seriesKey struct{ model, class string }

// cumCounts are the cumulative counts of a series that its window's counts are taken from.
type cumCounts struct {
	requests, errors int64
	output, input    float64
	errorsByClass    map[string]int64
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
	prev, prevEnd, sameTap := st.cum, time.Time{}, st.tap == t
	if st.last != nil {
		prevEnd = st.last.Start.AsTime().Add(st.last.Duration.AsDuration())
	}
	st.last, st.tap, st.cum = w, t, nil
	if t == nil {
		return []*llmtapv1.TimelineWindow{w}
	}
	sum := t.Stats().Summary()
	var span time.Duration
	w.Series, span = seriesOf(&sum)
	w.Span = durationpb.New(span)
	w.InFlight, w.RecordsDropped = t.InFlight(), t.Dropped()
	st.cum = cumulativeOf(&sum)
	if sameTap && prev != nil && end.After(prevEnd) && windowCounts(w.Series, prev, st.cum, end.Sub(prevEnd)) {
		w.Start, w.Duration = timeProto(prevEnd), durationpb.New(end.Sub(prevEnd))
	} else if span > 0 {
		// The first window: its counts and rates are the rolling window's, and so is its span.
		w.Start, w.Duration = timeProto(end.Add(-span)), durationpb.New(span)
	}
	return []*llmtapv1.TimelineWindow{w}
}

// cumulativeOf returns the cumulative counts of a summary per series.
func cumulativeOf(s *stats.Summary) map[seriesKey]cumCounts {
	out := map[seriesKey]cumCounts{}
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.Window != stats.WindowCumulative {
			continue
		}
		k := seriesKey{g.Key.Model, g.Key.Class}
		c := out[k]
		ok, errs := int64(g.Scalars[stats.TagRequestCount].Value), int64(g.Scalars[stats.TagErrorRequestCount].Value)
		c.requests += ok + errs
		c.errors += errs
		c.output += g.Scalars[stats.TagTotalOSL].Value // all generated tokens, as seriesOf
		c.input += g.Scalars[stats.TagTotalISL].Value
		for cl, n := range g.Errors {
			if c.errorsByClass == nil {
				c.errorsByClass = map[string]int64{}
			}
			c.errorsByClass[cl] += n
		}
		out[k] = c
	}
	return out
}

// windowCounts sets the counts and rates of series to the change from prev to cum over d. It
// reports false, changing nothing, when a count went down (the aggregator started over), so
// that the caller falls back to the rolling window's figures.
func windowCounts(series []*llmtapv1.Series, prev, cum map[seriesKey]cumCounts, d time.Duration) bool {
	for k, c := range cum {
		if p := prev[k]; c.requests < p.requests || c.errors < p.errors {
			return false
		}
	}
	sec := d.Seconds()
	for _, se := range series {
		c, p := cum[seriesKey{se.Model, se.Class}], prev[seriesKey{se.Model, se.Class}]
		se.Requests, se.Errors = c.requests-p.requests, c.errors-p.errors
		se.OutputTokens, se.InputTokens = c.output-p.output, c.input-p.input
		se.ErrorsByClass = nil
		for cl, n := range c.errorsByClass {
			if n -= p.errorsByClass[cl]; n > 0 {
				if se.ErrorsByClass == nil {
					se.ErrorsByClass = map[string]int64{}
				}
				se.ErrorsByClass[cl] = n
			}
		}
		se.RequestRate = float64(se.Requests) / sec
		se.OutputTokenRate, se.InputTokenRate = se.OutputTokens/sec, se.InputTokens/sec
	}
	return true
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
