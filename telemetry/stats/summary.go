package stats

import (
	"maps"
	"time"

	"github.com/llmtap/llmtap/internal/jsonobj"
)

// Stat is the distribution of one metric, in its display unit, with AIPerf's statistics.
// Avg, Std (population), Min, Max, Sum and Count are exact; the percentiles are numpy-style
// linear interpolations over HdrHistogram slots, within 0.05% (3 significant digits) plus
// half a recorded unit (0.5 µs for times) of the exact value.
type Stat struct {
	Unit  string  `json:"unit"`
	Avg   float64 `json:"avg"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	P1    float64 `json:"p1"`
	P5    float64 `json:"p5"`
	P10   float64 `json:"p10"`
	P25   float64 `json:"p25"`
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Std   float64 `json:"std"`
	Count int64   `json:"count"`
	Sum   float64 `json:"sum"`
	// Clamped counts values outside the histogram's range, which the percentiles saw at the
	// nearest bound (avg, min and max still use the true values), plus NaN/Inf values that
	// were skipped. It is omitted when zero.
	Clamped int64 `json:"clamped,omitempty"`
}

// Scalar is a single-value metric. AIPerf writes these as {"unit": …, "avg": value}, so Value
// is serialized as "avg".
type Scalar struct {
	Unit  string  `json:"unit"`
	Value float64 `json:"avg"`
}

// Key identifies the requests one group of statistics describes. Traffic classes, models and
// status classes never mix in a group.
type Key struct {
	Model       string `json:"model"`
	Class       string `json:"class"`
	StatusClass string `json:"status_class"`
}

// Less orders keys by model, class, then status class.
func (k Key) Less(o Key) bool {
	if k.Model != o.Model {
		return k.Model < o.Model
	}
	if k.Class != o.Class {
		return k.Class < o.Class
	}
	return k.StatusClass < o.StatusClass
}

// WindowCumulative names the group of everything recorded since the aggregator started.
const WindowCumulative = "cumulative"

// Sources counts, per token count, how the records obtained it ("usage", "tokenizer",
// "events", "none"), so every token figure says what it was measured from.
type Sources struct {
	OutputTokens map[string]int64 `json:"output_tokens,omitempty"`
	InputTokens  map[string]int64 `json:"input_tokens,omitempty"`
}

// GroupSummary is the statistics of one key over one window.
type GroupSummary struct {
	Key Key
	// Window is "cumulative" or the rolling window's span ("60s").
	Window string
	// Start and End bound the time the rates are computed over: for the cumulative group the
	// first request start and the last response end (AIPerf's benchmark_duration), for the
	// rolling window the window's start (or the aggregator's start, if later) and the time of
	// the snapshot.
	Start, End time.Time
	// Metrics holds the distributions by AIPerf tag; metrics without values are absent.
	Metrics map[string]Stat
	// Scalars holds the single-value metrics by AIPerf tag: counts, rates, goodput, totals.
	Scalars map[string]Scalar
	// Sources says how the token counts were obtained, over successful requests.
	Sources Sources
	// Errors counts failed requests by error class.
	Errors map[string]int64
}

// Summary is a snapshot of an aggregator: for every key, a cumulative group and a rolling
// window group, ordered by key with the cumulative group first.
type Summary struct {
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// Window is the rolling window's span.
	Window string `json:"window"`
	// SLOs are the goodput objectives the good-request counts were judged by.
	SLOs []SLO `json:"slos,omitempty"`
	// Folded counts records whose model was renamed "_other" because the model limit was
	// reached.
	Folded int64 `json:"folded_records"`
	// Groups holds the statistics.
	Groups []GroupSummary `json:"groups"`
	// Usage counts requests, tokens by kind, GPU time, energy and cost per tenant, model and
	// class, cumulative, ordered by tenant, model and class.
	Usage []Usage `json:"usage"`
}

// Find returns the group of key k and window w.
func (s Summary) Find(k Key, window string) (GroupSummary, bool) {
	for _, g := range s.Groups {
		if g.Key == k && g.Window == window {
			return g, true
		}
	}
	return GroupSummary{}, false
}

// MarshalJSON writes a group in the layout of AIPerf's profile_export_aiperf.json: every
// metric is a top-level member named by its tag, distributions as {"unit", "avg", "min",
// "max", "p1" … "p99", "std", "count", "sum"} and single values as {"unit", "avg"}. The key,
// window and time bounds come first, the token sources and error classes last. Members are
// written in a fixed order so the output is stable.
func (g GroupSummary) MarshalJSON() ([]byte, error) {
	m := []jsonobj.Member{{"model", g.Key.Model}, {"class", g.Key.Class}, {"status_class", g.Key.StatusClass},
		{"window", g.Window}, {"start_time", g.Start}, {"end_time", g.End}}
	for i := range specs {
		if st, ok := g.Metrics[specs[i].tag]; ok {
			m = append(m, jsonobj.Member{specs[i].tag, st})
		}
	}
	for _, sc := range scalars {
		if v, ok := g.Scalars[sc.tag]; ok {
			m = append(m, jsonobj.Member{sc.tag, v})
		}
	}
	errs := g.Errors
	if errs == nil {
		errs = map[string]int64{}
	}
	return jsonobj.Marshal(append(m, jsonobj.Member{"sources", g.Sources}, jsonobj.Member{"errors", errs}))
}

// Combine merges the cumulative groups of one model and class, one per status class, into
// the single group AIPerf's summary describes: the distributions of the valid requests (only
// successful requests have values, and they are all in one group, that of 2xx, which Combine
// takes as the base), every failure counted in error_request_count and in the good-request
// fraction whatever its status, and the rates recomputed over the valid requests' time
// bounds. Groups of other windows are ignored; an empty list gives an empty group.
func Combine(groups []GroupSummary, withSLOs bool) GroupSummary {
	var base *GroupSummary
	for i := range groups {
		g := &groups[i]
		if g.Window != WindowCumulative {
			continue
		}
		if base == nil || (g.Key.StatusClass == "2xx" && base.Key.StatusClass != "2xx") {
			base = g
		}
	}
	if base == nil {
		return GroupSummary{Window: WindowCumulative, Metrics: map[string]Stat{}, Scalars: map[string]Scalar{}}
	}
	out := *base
	out.Key.StatusClass = "all"
	out.Metrics = maps.Clone(base.Metrics)
	out.Errors = map[string]int64{}
	out.Sources = Sources{OutputTokens: map[string]int64{}, InputTokens: map[string]int64{}}
	var c counts
	for i := range groups {
		g := &groups[i]
		if g.Window != WindowCumulative {
			continue
		}
		c.ok += int64(g.Scalars[TagRequestCount].Value)
		c.errors += int64(g.Scalars[TagErrorRequestCount].Value)
		c.good += int64(g.Scalars[TagGoodRequestCount].Value)
		c.outTokens += int64(g.Scalars[TagTotalOutputTokens].Value)
		c.oslTokens += int64(g.Scalars[TagTotalOSL].Value)
		c.inTokens += int64(g.Scalars[TagTotalISL].Value)
		c.reasonTokens += int64(g.Scalars[TagTotalReasoning].Value)
		for k, v := range g.Errors {
			out.Errors[k] += v
		}
		for k, v := range g.Sources.OutputTokens {
			out.Sources.OutputTokens[k] += v
		}
		for k, v := range g.Sources.InputTokens {
			out.Sources.InputTokens[k] += v
		}
		if g.Scalars[TagRequestCount].Value > 0 && g != base {
			// Valid requests of another status class (a 3xx answer with content): widen the
			// bounds to them.
			if !g.Start.IsZero() && (out.Start.IsZero() || g.Start.Before(out.Start)) {
				out.Start = g.Start
			}
			if g.End.After(out.End) {
				out.End = g.End
			}
		}
	}
	out.Scalars = scalarValues(&c, out.End.Sub(out.Start), withSLOs)
	for _, tag := range []string{TagGPUEnergy, TagTokensPerJoule, TagJoulesPerOutputToken} {
		if v, ok := base.Scalars[tag]; ok {
			out.Scalars[tag] = v
		}
	}
	return out
}

// Metric describes one metric tag of the catalog: its console header and whether it is a
// per-request distribution.
type Metric struct {
	Tag, Header string
	Dist        bool
}

// Catalog lists every metric a group may hold, distributions first, in the order summaries
// show them.
func Catalog() []Metric {
	out := make([]Metric, 0, len(specs)+len(scalars))
	for i := range specs {
		out = append(out, Metric{Tag: specs[i].tag, Header: specs[i].header, Dist: true})
	}
	for _, s := range scalars {
		out = append(out, Metric{Tag: s.tag, Header: s.header})
	}
	return out
}
