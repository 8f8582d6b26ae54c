package commands

import (
	"fmt"
	"github.com/llmtap/llmtap/internal/termsafe"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
)

// topRow is one (model, class) row of llmtap top: its figures from the newest window it had
// activity in, and its counts added up over the windows since top started.
type topRow struct {
	s    *llmtapv1.Series
	last int64 // Seq of that window
	// total adds up the latest version of each window the row had activity in: a window sent
	// again once final replaces the provisional version it was first sent as.
	total topCounts
	// provisional holds the row's series of the windows not final yet, by Seq, until the final
	// version replaces it (at most topMaxProvisional windows behind the newest are kept).
	provisional map[int64]*llmtapv1.Series
}

// topMaxProvisional bounds how many windows behind the newest a provisional window is still
// replaced when it arrives again final (the timeline's Settle is 10 windows by default).
const topMaxProvisional = 1000

// topCounts are counts added up over windows.
type topCounts struct {
	requests, errors int64
	input, output    float64
}

// add adds (sign 1) or takes away (sign -1) the counts of a series.
func (c *topCounts) add(s *llmtapv1.Series, sign int64) {
	c.requests += sign * s.GetRequests()
	c.errors += sign * s.GetErrors()
	c.input += float64(sign) * s.GetInputTokens()
	c.output += float64(sign) * s.GetOutputTokens()
}

// topView is the state of the view: the rows seen recently.
type topView struct {
	cfg    topConfig
	rows   map[[2]string]*topRow
	client *http.Client
	newest int64 // Seq of the newest window taken
}

// add takes a window: its series update their rows' totals (replacing the window's earlier,
// provisional version when the stream sends it again final) and, when it is the newest window,
// their figures; rows idle for more than keep windows are dropped. It reports whether w is the
// newest window so far (the one to show).
func (v *topView) add(w *llmtapv1.TimelineWindow) bool {
	seq := w.GetSeq()
	for _, r := range v.rows {
		if old := r.provisional[seq]; old != nil {
			r.total.add(old, -1)
			delete(r.provisional, seq)
		}
	}
	for _, s := range w.GetSeries() {
		k := [2]string{s.Model, s.Class}
		r := v.rows[k]
		if r == nil {
			r = &topRow{}
			v.rows[k] = r
		}
		r.total.add(s, 1)
		if !w.GetFinal() {
			if r.provisional == nil {
				r.provisional = map[int64]*llmtapv1.Series{}
			}
			r.provisional[seq] = s
		}
		if seq >= r.last {
			r.s, r.last = s, seq
		}
	}
	if seq <= v.newest {
		return false
	}
	v.newest = seq
	for k, r := range v.rows {
		if seq-r.last > int64(v.cfg.keep) {
			delete(v.rows, k)
			continue
		}
		for ps := range r.provisional {
			if seq-ps > topMaxProvisional {
				delete(r.provisional, ps)
			}
		}
	}
	return true
}

// frame renders window w, each line cut to width runes (0: no limit).
func (v *topView) frame(w *llmtapv1.TimelineWindow, width int) string {
	var b strings.Builder
	start := w.GetStart().AsTime()
	d := w.GetDuration().AsDuration()
	// The window is what the counts and rates cover; the percentiles of a source other than the
	// timeline cover its span (the aggregator's rolling window), which the header then names.
	fmt.Fprintf(&b, "llmtap top  %s  %s UTC  window %v from %s", v.cfg.base, start.Add(d).UTC().Format(time.TimeOnly), topSpan(d), w.GetSource())
	if sp := w.GetSpan().AsDuration(); w.GetSource() != "timeline" && w.GetSpan() != nil && sp != d {
		fmt.Fprintf(&b, " (percentiles over the last %v)", topSpan(sp))
	}
	fmt.Fprintf(&b, "\nin flight %d  records dropped %d\n\n", w.GetInFlight(), w.GetRecordsDropped())

	keys := make([][2]string, 0, len(v.rows))
	for k := range v.rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "MODEL\tCLASS\tREQ/S\tTTFT p50\tTTFT p99\tITL p50\tITL p99\tOUT TOK/S\tERRORS\tIN FLIGHT\t\n")
	for _, k := range keys {
		r := v.rows[k]
		if r.last != w.GetSeq() { // idle in this window
			fmt.Fprintf(tw, "%s\t%s\t0.0\t-\t-\t-\t-\t0.0\t0\t-\t\n", termsafe.String(k[0]), termsafe.String(k[1]))
			continue
		}
		s := r.s
		inFlight := "-"
		if s.InFlight != nil {
			inFlight = fmt.Sprint(s.GetInFlight())
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t\n", termsafe.String(k[0]), termsafe.String(k[1]), s.GetRequestRate(),
			topMs(s.GetTtftMs(), false), topMs(s.GetTtftMs(), true), topMs(s.GetItlMs(), false), topMs(s.GetItlMs(), true),
			s.GetOutputTokenRate(), topErrors(s), inFlight)
	}
	if len(keys) == 0 {
		fmt.Fprint(tw, "(no requests yet)\t\t\t\t\t\t\t\t\t\t\n")
	}
	_ = tw.Flush()

	if len(w.GetGpus()) > 0 {
		b.WriteByte('\n')
		for _, g := range w.GetGpus() {
			fmt.Fprintf(&b, "GPU %d %s%s\n", g.GetIndex(), g.GetName(), topGPU(g))
		}
	}
	if len(w.GetServers()) > 0 {
		b.WriteByte('\n')
		for _, s := range w.GetServers() {
			fmt.Fprintf(&b, "server %s %s%s\n", s.GetKind(), s.GetModel(), topServer(s))
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

// topSpan rounds a window's length for the header: to 100 ms, or to 1 ms below a second.
func topSpan(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// topMs writes a latency quantile (p99 when high) in milliseconds, "-" when there is none.
func topMs(q *llmtapv1.Quantiles, high bool) string {
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

// topErrors writes the error count with its most frequent class.
func topErrors(s *llmtapv1.Series) string {
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

// topGPU writes the readings a GPU reported.
func topGPU(g *llmtapv1.GPU) string {
	var b strings.Builder
	if g.UtilizationPercent != nil {
		fmt.Fprintf(&b, "  util %.0f%%", g.GetUtilizationPercent())
	}
	if g.MemoryUtilizationPercent != nil {
		fmt.Fprintf(&b, "  mem busy %.0f%%", g.GetMemoryUtilizationPercent())
	}
	if g.PowerWatts != nil {
		fmt.Fprintf(&b, "  power %.0f W", g.GetPowerWatts())
	}
	if g.EnergyJoules != nil {
		fmt.Fprintf(&b, "  energy %.0f J", g.GetEnergyJoules())
	}
	if g.MemoryUsedBytes != nil && g.MemoryTotalBytes != nil {
		fmt.Fprintf(&b, "  mem %.1f/%.1f GiB", float64(g.GetMemoryUsedBytes())/(1<<30), float64(g.GetMemoryTotalBytes())/(1<<30))
	}
	if g.TemperatureCelsius != nil {
		fmt.Fprintf(&b, "  %.0f°C", g.GetTemperatureCelsius())
	}
	if g.SmClockMhz != nil {
		fmt.Fprintf(&b, "  SM %.0f MHz", g.GetSmClockMhz())
	}
	return b.String()
}

// topServer writes the figures an inference server reported.
func topServer(s *llmtapv1.ServerModel) string {
	var b strings.Builder
	if s.KvCacheUsage != nil {
		fmt.Fprintf(&b, "  kv cache %.0f%%", 100*s.GetKvCacheUsage())
	}
	if s.Running != nil {
		fmt.Fprintf(&b, "  running %.0f", s.GetRunning())
	}
	if s.Waiting != nil {
		fmt.Fprintf(&b, "  waiting %.0f", s.GetWaiting())
	}
	if s.GenerationTokensPerSecond != nil {
		fmt.Fprintf(&b, "  gen %.1f tok/s", s.GetGenerationTokensPerSecond())
	}
	if s.PromptTokensPerSecond != nil {
		fmt.Fprintf(&b, "  prompt %.1f tok/s", s.GetPromptTokensPerSecond())
	}
	if s.PrefixCacheHitRate != nil {
		fmt.Fprintf(&b, "  prefix hits %.0f%%", 100*s.GetPrefixCacheHitRate())
	}
	if q := s.GetTtftMs(); q.GetCount() > 0 {
		fmt.Fprintf(&b, "  server TTFT p50 %s", topMs(q, false))
	}
	if q := s.GetItlMs(); q.GetCount() > 0 {
		fmt.Fprintf(&b, "  server ITL p50 %s", topMs(q, false))
	}
	return b.String()
}
