// Package top is the view model and the text rendering of `llmtap top`: it takes the windows of
// the Connect API's timeline stream (Add), keeps a row per model and traffic class with its
// counts added up over the windows, and renders a window as one frame of text (Frame), with the
// busiest tenants of Caddy's admin listener below it (Tenants). It neither prints nor controls a
// terminal: the command does both.
package top

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/termsafe"
)

// Options are what a view shows.
type Options struct {
	// Base is the API's address (http://host:port): the frame's header names it, and Tenants
	// reads /llmtap/summary from it.
	Base string
	// Class and Model keep only the series of this traffic class and model (empty: all).
	Class, Model string
	// Interval is the refresh interval the stream asks for (0: the server's window).
	Interval time.Duration
	// Keep is how many windows a series stays listed after its last activity.
	Keep int
}

// Key names a row: a model and a traffic class.
type Key struct{ Model, Class string }

// Counts are counts added up over windows.
type Counts struct {
	Requests, Errors int64
	Input, Output    float64
}

// add adds (sign 1) or takes away (sign -1) the counts of a series.
func (c *Counts) add(s *llmtapv1.Series, sign int64) {
	c.Requests += sign * s.GetRequests()
	c.Errors += sign * s.GetErrors()
	c.Input += float64(sign) * s.GetInputTokens()
	c.Output += float64(sign) * s.GetOutputTokens()
}

// Row is one (model, class) row: its figures from the newest window it had activity in, and
// its counts added up over the windows since the view started.
type Row struct {
	Series *llmtapv1.Series
	Seq    int64 // Seq of that window
	// Total adds up the latest version of each window the row had activity in: a window sent
	// again once final replaces the provisional version it was first sent as.
	Total Counts
	// provisional holds the row's series of the windows not final yet, by Seq, until the final
	// version replaces it (at most maxProvisional windows behind the newest are kept).
	provisional map[int64]*llmtapv1.Series
}

// Provisional is how many of the row's windows have not been sent final yet.
func (r *Row) Provisional() int { return len(r.provisional) }

// maxProvisional bounds how many windows behind the newest a provisional window is still
// replaced when it arrives again final (the timeline's Settle is 10 windows by default).
const maxProvisional = 1000

// View is the state of the view: the rows seen recently.
type View struct {
	o      Options
	rows   map[Key]*Row
	newest int64 // Seq of the newest window taken
}

// New returns an empty view.
func New(o Options) *View { return &View{o: o, rows: map[Key]*Row{}} }

// Stream opens the API's timeline stream with the view's filters and interval.
func (v *View) Stream(ctx context.Context, api llmtapv1connect.TapServiceClient) (*connect.ServerStreamForClient[llmtapv1.StreamTimelineResponse], error) {
	req := &llmtapv1.StreamTimelineRequest{Class: v.o.Class, Model: v.o.Model}
	if v.o.Interval > 0 {
		req.Interval = durationpb.New(v.o.Interval)
	}
	return api.StreamTimeline(ctx, connect.NewRequest(req))
}

// Row returns the row of a model and class, nil when the view lists none.
func (v *View) Row(k Key) *Row { return v.rows[k] }

// Newest returns the Seq of the newest window taken.
func (v *View) Newest() int64 { return v.newest }

// Add takes a window: its series update their rows' totals (replacing the window's earlier,
// provisional version when the stream sends it again final) and, when it is the newest window,
// their figures; rows idle for more than Keep windows are dropped. It reports whether w is the
// newest window so far (the one to show).
func (v *View) Add(w *llmtapv1.TimelineWindow) bool {
	seq := w.GetSeq()
	for _, r := range v.rows {
		if old := r.provisional[seq]; old != nil {
			r.Total.add(old, -1)
			delete(r.provisional, seq)
		}
	}
	for _, s := range w.GetSeries() {
		k := Key{s.Model, s.Class}
		r := v.rows[k]
		if r == nil {
			r = &Row{}
			v.rows[k] = r
		}
		r.Total.add(s, 1)
		if !w.GetFinal() {
			if r.provisional == nil {
				r.provisional = map[int64]*llmtapv1.Series{}
			}
			r.provisional[seq] = s
		}
		if seq >= r.Seq {
			r.Series, r.Seq = s, seq
		}
	}
	if seq <= v.newest {
		return false
	}
	v.newest = seq
	for k, r := range v.rows {
		if seq-r.Seq > int64(v.o.Keep) {
			delete(v.rows, k)
			continue
		}
		for ps := range r.provisional {
			if seq-ps > maxProvisional {
				delete(r.provisional, ps)
			}
		}
	}
	return true
}

// Frame renders window w, each line cut to width runes (0: no limit). The model and class
// cells are escaped (termsafe.String) so that they keep the table's layout; the caller escapes
// the frame as a whole (termsafe.Text) before a terminal sees it.
func (v *View) Frame(w *llmtapv1.TimelineWindow, width int) string {
	var b strings.Builder
	start := w.GetStart().AsTime()
	d := w.GetDuration().AsDuration()
	// The window is what the counts and rates cover; the percentiles of a source other than the
	// timeline cover its span (the aggregator's rolling window), which the header then names.
	fmt.Fprintf(&b, "llmtap top  %s  %s UTC  window %v from %s", v.o.Base, start.Add(d).UTC().Format(time.TimeOnly), span(d), w.GetSource())
	if sp := w.GetSpan().AsDuration(); w.GetSource() != "timeline" && w.GetSpan() != nil && sp != d {
		fmt.Fprintf(&b, " (percentiles over the last %v)", span(sp))
	}
	fmt.Fprintf(&b, "\nin flight %d  records dropped %d\n\n", w.GetInFlight(), w.GetRecordsDropped())

	keys := make([]Key, 0, len(v.rows))
	for k := range v.rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), strings.Compare(a.Class, b.Class))
	})
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "MODEL\tCLASS\tREQ/S\tTTFT p50\tTTFT p99\tITL p50\tITL p99\tOUT TOK/S\tERRORS\tIN FLIGHT\t\n")
	for _, k := range keys {
		r := v.rows[k]
		if r.Seq != w.GetSeq() { // idle in this window
			fmt.Fprintf(tw, "%s\t%s\t0.0\t-\t-\t-\t-\t0.0\t0\t-\t\n", termsafe.String(k.Model), termsafe.String(k.Class))
			continue
		}
		s := r.Series
		inFlight := "-"
		if s.InFlight != nil {
			inFlight = fmt.Sprint(s.GetInFlight())
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t\n", termsafe.String(k.Model), termsafe.String(k.Class), s.GetRequestRate(),
			ms(s.GetTtftMs(), false), ms(s.GetTtftMs(), true), ms(s.GetItlMs(), false), ms(s.GetItlMs(), true),
			s.GetOutputTokenRate(), errorsOf(s), inFlight)
	}
	if len(keys) == 0 {
		fmt.Fprint(tw, "(no requests yet)\t\t\t\t\t\t\t\t\t\t\n")
	}
	_ = tw.Flush()

	if len(w.GetGpus()) > 0 {
		b.WriteByte('\n')
		for _, g := range w.GetGpus() {
			fmt.Fprintf(&b, "GPU %d %s%s\n", g.GetIndex(), g.GetName(), gpu(g))
		}
	}
	if len(w.GetServers()) > 0 {
		b.WriteByte('\n')
		for _, s := range w.GetServers() {
			fmt.Fprintf(&b, "server %s %s%s\n", s.GetKind(), s.GetModel(), server(s))
		}
	}
	if sh := w.GetShadow(); sh != nil {
		b.WriteByte('\n')
		for _, l := range sh.GetLoads() {
			fmt.Fprintf(&b, "shadow %s  %s", l.GetName(), l.GetState())
			if l.GetPauseReason() != "" {
				fmt.Fprintf(&b, " (%s)", l.GetPauseReason())
			}
			fmt.Fprintf(&b, "  rate %.4g/s (achieved %.3g/s)  in flight %d  sent %d  ok %d  errors %d  dropped %d\n",
				l.GetRate(), l.GetAchievedRate(), l.GetInFlight(), l.GetSent(), l.GetOk(), l.GetErrors(), l.GetDropped())
		}
		if g := sh.GetGuard(); g.GetTripped() {
			fmt.Fprintf(&b, "guard rails tripped: %s\n", g.GetReason())
		}
	}
	if width <= 0 {
		return b.String()
	}
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		if r := []rune(strings.TrimSuffix(l, "\n")); len(r) > width {
			lines[i] = string(r[:width]) + l[len(strings.TrimSuffix(l, "\n")):]
		}
	}
	return strings.Join(lines, "")
}

// span rounds a window's length for the header: to 100 ms, or to 1 ms below a second.
func span(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// ms writes a latency quantile (p99 when high) in milliseconds, "-" when there is none.
func ms(q *llmtapv1.Quantiles, high bool) string {
	if q.GetCount() == 0 {
		return "-"
	}
	v := q.GetP50()
	if high {
		v = q.GetP99()
	}
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fms", v)
}

// errorsOf writes the error count with its most frequent class.
func errorsOf(s *llmtapv1.Series) string {
	if s.GetErrors() == 0 {
		return "0"
	}
	top, n := "", int64(0)
	for c, k := range s.GetErrorsByClass() {
		if k > n || (k == n && c < top) {
			top, n = c, k
		}
	}
	if top == "" {
		return fmt.Sprint(s.GetErrors())
	}
	return fmt.Sprintf("%d (%s)", s.GetErrors(), top)
}

// gpu writes the readings a GPU reported.
func gpu(g *llmtapv1.GPU) string {
	var b strings.Builder
	put(&b, "  util %.0f%%", g.UtilizationPercent, 1)
	put(&b, "  mem busy %.0f%%", g.MemoryUtilizationPercent, 1)
	put(&b, "  power %.0f W", g.PowerWatts, 1)
	put(&b, "  energy %.0f J", g.EnergyJoules, 1)
	if g.MemoryUsedBytes != nil && g.MemoryTotalBytes != nil {
		fmt.Fprintf(&b, "  mem %.1f/%.1f GiB", float64(g.GetMemoryUsedBytes())/(1<<30), float64(g.GetMemoryTotalBytes())/(1<<30))
	}
	put(&b, "  %.0f°C", g.TemperatureCelsius, 1)
	put(&b, "  SM %.0f MHz", g.SmClockMhz, 1)
	return b.String()
}

// server writes the figures an inference server reported.
func server(s *llmtapv1.ServerModel) string {
	var b strings.Builder
	put(&b, "  kv cache %.0f%%", s.KvCacheUsage, 100)
	put(&b, "  running %.0f", s.Running, 1)
	put(&b, "  waiting %.0f", s.Waiting, 1)
	put(&b, "  gen %.1f tok/s", s.GenerationTokensPerSecond, 1)
	put(&b, "  prompt %.1f tok/s", s.PromptTokensPerSecond, 1)
	put(&b, "  prefix hits %.0f%%", s.PrefixCacheHitRate, 100)
	if q := s.GetTtftMs(); q.GetCount() > 0 {
		fmt.Fprintf(&b, "  server TTFT p50 %s", ms(q, false))
	}
	if q := s.GetItlMs(); q.GetCount() > 0 {
		fmt.Fprintf(&b, "  server ITL p50 %s", ms(q, false))
	}
	return b.String()
}

// put writes a figure the server reported, times scale, in format; nothing when it has none.
func put(b *strings.Builder, format string, v *float64, scale float64) {
	if v != nil {
		fmt.Fprintf(b, format, scale*(*v))
	}
}
