package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	two "github.com/llmtap/llmtap/telemetry/compare"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Verdicts of a canary comparison.
const (
	VerdictBetter    = "better"
	VerdictSame      = "same"
	VerdictWorse     = "worse"
	VerdictNotEnough = "not enough pairs yet"
	// VerdictInconclusive is the last look's verdict when a comparison was still undecided:
	// pairs past the last look are not used, so it is final (more looks or wider margins
	// would decide).
	VerdictInconclusive = "inconclusive"
)

// Defaults of VerdictOptions.
const (
	DefaultVerdictAlpha       = 0.05
	DefaultVerdictMargin      = 0.05
	DefaultVerdictTailMargin  = 0.20
	DefaultVerdictMarginMs    = 2.0
	DefaultVerdictErrorMargin = 0.01
	DefaultVerdictFirstLook   = 200
	DefaultVerdictLooks       = 7
)

// VerdictOptions are the equivalence margins and the look schedule of a canary verdict.
//
// The method: the verdict is taken only at looks, when a model's pairs reach FirstLook,
// 2·FirstLook, 4·FirstLook … (Looks of them); between looks the last look's verdict stands,
// so however often a gate polls, it reads at most Looks verdicts. Look k (from 0) spends
// Alpha/2^(k+1) of the false-alarm budget, split evenly over the comparisons of the look
// (Bonferroni), so the chance that any look of a model declares a difference that is not there
// is at most Alpha in all (a union bound, whatever the dependence between looks and metrics).
//
// Each quantile comparison is a confidence interval for the ratio mirror/live of that quantile,
// from exact distribution-free (binomial order-statistic) intervals of each side's quantile,
// each at half the comparison's level; the error rates are compared by the difference of their
// Wilson intervals. Pairing is not used (the intervals are marginal): the method gives up some
// power for exactness and sees a worse tail at an equal median, since the tail quantiles are
// compared directly.
type VerdictOptions struct {
	// Alpha bounds the chance of a false "better" or "worse" over all looks. Default 0.05.
	Alpha float64 `json:"alpha,omitempty"`
	// Margin is the equivalence margin of the median and 90th percentile ratios: within
	// 1±Margin they count as the same. Default 0.05.
	Margin float64 `json:"margin,omitempty"`
	// TailMargin is the equivalence margin of the 99th percentile ratios. Default 0.20.
	TailMargin float64 `json:"tail_margin,omitempty"`
	// MarginMs is the smallest difference of a time metric, in ms, that counts at all, so a
	// constant offset between where the two sides are measured is not a verdict. Default 2; a
	// negative value means none.
	MarginMs float64 `json:"margin_ms,omitempty"`
	// ErrorMargin is the equivalence margin of the error rates' difference (0.01 is one
	// percentage point). Default 0.01.
	ErrorMargin float64 `json:"error_margin,omitempty"`
	// FirstLook is the number of a model's pairs at the first look. Default 200.
	FirstLook int `json:"first_look,omitempty"`
	// Looks is the number of looks; after the last the verdict no longer changes. Default 7
	// (200 … 12,800 pairs).
	Looks int `json:"looks,omitempty"`
	// SLO, when set, names the objectives both records of every pair are judged by, in
	// AIPerf's --goodput syntax ("time_to_first_token:500 request_latency:2000", one SLO over
	// every request), for the verdict's SLO attainment comparison. Default: the handler's slo
	// blocks (the one that counts the live request), or none.
	SLO string `json:"slo,omitempty"`
}

func (o VerdictOptions) withDefaults() VerdictOptions {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultVerdictAlpha
	}
	if o.Margin <= 0 {
		o.Margin = DefaultVerdictMargin
	}
	if o.TailMargin <= 0 {
		o.TailMargin = DefaultVerdictTailMargin
	}
	if o.MarginMs < 0 {
		o.MarginMs = 0
	} else if o.MarginMs == 0 {
		o.MarginMs = DefaultVerdictMarginMs
	}
	if o.ErrorMargin <= 0 {
		o.ErrorMargin = DefaultVerdictErrorMargin
	}
	if o.FirstLook <= 0 {
		o.FirstLook = DefaultVerdictFirstLook
	}
	if o.Looks <= 0 {
		o.Looks = DefaultVerdictLooks
	}
	return o
}

// MaxVerdictPairs bounds the pairs a model's verdict keeps (FirstLook · 2^(Looks−1)): with
// the 64 models a Pairer keeps verdicts for, at most 6.5 million pairs.
const MaxVerdictPairs = 102_400

// Validate checks the options: fractions in (0, 1), counts positive, and the last look at
// most MaxVerdictPairs.
func (o VerdictOptions) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"alpha", o.Alpha}, {"margin", o.Margin}, {"tail_margin", o.TailMargin}, {"error_margin", o.ErrorMargin}} {
		if !(f.v >= 0 && f.v < 1) {
			errs = append(errs, fmt.Errorf("%s %v: must be in (0, 1) (0 means the default)", f.name, f.v))
		}
	}
	if math.IsNaN(o.MarginMs) || math.IsInf(o.MarginMs, 0) {
		errs = append(errs, fmt.Errorf("margin_ms %v: must be a number", o.MarginMs))
	}
	if _, err := stats.ParseSLOs(o.SLO); err != nil {
		errs = append(errs, fmt.Errorf("slo: %w", err))
	}
	if o.FirstLook < 0 || o.Looks < 0 || o.Looks > 20 {
		errs = append(errs, fmt.Errorf("first_look %d and looks %d: must be positive (0 means the default), looks at most 20", o.FirstLook, o.Looks))
	} else if n := o.MaxPairs(); n > MaxVerdictPairs {
		errs = append(errs, fmt.Errorf("first_look × 2^(looks−1) = %d pairs: at most %d", n, MaxVerdictPairs))
	}
	return errors.Join(errs...)
}

// LookAt returns the number of pairs at look k (from 0).
func (o VerdictOptions) LookAt(k int) int { return o.withDefaults().FirstLook << k }

// lookAt returns the last look n pairs have reached (from 0; -1 before the first).
func (o VerdictOptions) lookAt(n int) int {
	o = o.withDefaults()
	look := -1
	for k := range o.Looks {
		if n >= o.LookAt(k) {
			look = k
		}
	}
	return look
}

// MaxPairs is the number of pairs at the last look.
func (o VerdictOptions) MaxPairs() int {
	o = o.withDefaults()
	return o.LookAt(o.Looks - 1)
}

// Verdict is one model's canary verdict, taken at its last look.
type Verdict struct {
	// Outcome is better, same, worse, "not enough pairs yet", or inconclusive (undecided at the
	// last look: final).
	Outcome string `json:"verdict"`
	// Pairs is the number of pairs the verdict was taken over (the last look's).
	Pairs int `json:"pairs"`
	// Look is the look it was taken at (from 0; -1 before the first); NextLookAt is the pair
	// count of the next look, 0 after the last.
	Look       int `json:"look"`
	NextLookAt int `json:"next_look_at"`
	// Level is the confidence level of each comparison at that look.
	Level float64 `json:"level"`
	// Diverged names the comparison furthest from equal (by its point estimate against its
	// margin); empty before the first look.
	Diverged string `json:"diverged"`
	// Comparisons are the metric comparisons of the look.
	Comparisons []MetricVerdict `json:"comparisons"`
}

// MetricVerdict is one comparison of a verdict.
type MetricVerdict struct {
	// Name is the metric and quantile ("ttft_ms p99") or "error_rate".
	Name string `json:"name"`
	// Live and Mirror are the point estimates (a quantile in the metric's unit, or a rate).
	Live   float64 `json:"live"`
	Mirror float64 `json:"mirror"`
	// Estimate is mirror/live for a quantile, mirror−live for the error rate; Low and High
	// bound it at the look's level (±Inf where the pairs cannot bound it yet; null in JSON).
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Margin is the equivalence margin it was judged by.
	Margin float64 `json:"margin"`
	// Count is the number of pairs the comparison is over (both sides had the metric).
	Count int `json:"count"`
	// Verdict is better, same, worse or "not enough pairs yet".
	Verdict string `json:"verdict"`
	// PairsNeeded estimates the pairs at which the interval would be narrow enough to tell a
	// change of twice the margin from the margin (from the interval's width now, which
	// shrinks as 1/√n); 0 when it cannot be estimated yet.
	PairsNeeded int `json:"pairs_needed"`
}

// verdictQuantiles are the quantiles compared per metric, with whether the tail margin applies.
var verdictQuantiles = []struct {
	metric string
	q      float64
	tail   bool
	get    func(Side) *float64
}{
	{"ttft_ms p50", 0.50, false, func(s Side) *float64 { return s.TTFTMs }},
	{"ttft_ms p90", 0.90, false, func(s Side) *float64 { return s.TTFTMs }},
	{"ttft_ms p99", 0.99, true, func(s Side) *float64 { return s.TTFTMs }},
	{"itl_ms p50", 0.50, false, func(s Side) *float64 { return s.ITLMs }},
	{"itl_ms p99", 0.99, true, func(s Side) *float64 { return s.ITLMs }},
	{"request_latency_ms p50", 0.50, false, func(s Side) *float64 { return s.LatencyMs }},
	{"request_latency_ms p99", 0.99, true, func(s Side) *float64 { return s.LatencyMs }},
	{"output_tokens p50", 0.50, false, func(s Side) *float64 { return s.OutputTokens }},
}

// Judge takes the verdict over one model's pairs (oldest first) at the last look their count
// has reached; pairs past the last look are not used.
func Judge(pairs []Pair, o VerdictOptions) Verdict {
	o = o.withDefaults()
	look := o.lookAt(len(pairs))
	v := Verdict{Outcome: VerdictNotEnough, Look: look, Comparisons: []MetricVerdict{}}
	if look+1 < o.Looks {
		v.NextLookAt = o.LookAt(look + 1)
	}
	if look < 0 {
		return v
	}
	pairs = pairs[:o.LookAt(look)]
	v.Pairs = len(pairs)
	tests := len(verdictQuantiles) + 1
	judged := slices.ContainsFunc(pairs, func(p Pair) bool { return p.Live.SLOMet != nil })
	if judged {
		tests++ // the SLO attainment is one comparison more
	}
	alpha := o.Alpha / math.Exp2(float64(look+1)) / float64(tests) // per comparison
	v.Level = 1 - alpha
	worst := 0.0
	for _, vq := range verdictQuantiles {
		var live, mirror []float64
		for _, p := range pairs {
			// A quantile of a metric is over the requests that succeeded on both sides.
			if !p.Live.OK || !p.Mirror.OK {
				continue
			}
			if l, m := vq.get(p.Live), vq.get(p.Mirror); l != nil && m != nil {
				live, mirror = append(live, *l), append(mirror, *m)
			}
		}
		margin := o.Margin
		if vq.tail {
			margin = o.TailMargin
		}
		mv := compareQuantile(vq.metric, live, mirror, vq.q, alpha, margin, o.MarginMs)
		v.Comparisons = append(v.Comparisons, mv)
		if d := divergence(mv, false); d > worst {
			worst, v.Diverged = d, mv.Name
		}
	}
	ev := compareErrors(pairs, alpha, o.ErrorMargin)
	v.Comparisons = append(v.Comparisons, ev)
	if d := divergence(ev, true); d > worst {
		worst, v.Diverged = d, ev.Name
	}
	if judged {
		sv := compareAttainment(pairs, alpha, o.ErrorMargin)
		v.Comparisons = append(v.Comparisons, sv)
		if d := divergence(sv, true); d > worst {
			v.Diverged = sv.Name
		}
	}
	v.Outcome = combine(v.Comparisons)
	if v.Outcome == VerdictNotEnough && look == o.Looks-1 {
		v.Outcome = VerdictInconclusive // no later look will decide
	}
	return v
}

// divergence is how far a comparison's estimate lies from equal, in margins.
func divergence(m MetricVerdict, difference bool) float64 {
	return two.Result{Estimate: m.Estimate, Margin: m.Margin, Count: max(1, m.Count), Difference: difference}.Divergence()
}

// combine is worse when any comparison is worse, better when none is worse and every one is
// better or the same with one better at least, same when all are the same, and not enough
// pairs yet otherwise.
func combine(cs []MetricVerdict) string {
	counts := map[string]int{}
	for _, c := range cs {
		if c.Count == 0 {
			continue // a metric neither side has (ITL of single-token answers) is not compared
		}
		counts[c.Verdict]++
	}
	switch {
	case counts[VerdictWorse] > 0:
		return VerdictWorse
	case counts[VerdictNotEnough] > 0:
		return VerdictNotEnough
	case counts[VerdictBetter] > 0:
		return VerdictBetter
	case counts[VerdictSame] > 0:
		return VerdictSame
	}
	return VerdictNotEnough
}

// compareQuantile compares the q-quantile of mirror with live's (two.Quantile).
func compareQuantile(name string, live, mirror []float64, q, alpha, margin, marginAbs float64) MetricVerdict {
	if strings.HasPrefix(name, "output_tokens") {
		marginAbs = 0.5 // a token: counts differ by whole tokens
	}
	return fromResult(two.Quantile(name, live, mirror, q, alpha, margin, marginAbs))
}

// compareErrors compares the error rates, mirror minus live, by their Wilson intervals.
func compareErrors(pairs []Pair, alpha, margin float64) MetricVerdict {
	var le, me int
	for _, p := range pairs {
		if !p.Live.OK {
			le++
		}
		if !p.Mirror.OK {
			me++
		}
	}
	return fromResult(two.Rates("error_rate", le, len(pairs), me, len(pairs), alpha, margin))
}

// SLOAttainment is the name of the comparison of the SLO attainments.
const SLOAttainment = "slo_attainment"

// compareAttainment compares the share of the pairs judged by an SLO (Pair.SLO) that met it,
// live beside mirror, by the Wilson intervals of the shares that missed it (as the error rates
// are compared), written as attainments: Live and Mirror the attainments, the estimate and
// its interval mirror − live (a lower attainment is worse).
func compareAttainment(pairs []Pair, alpha, margin float64) MetricVerdict {
	var n, lm, mm int
	for _, p := range pairs {
		if p.Live.SLOMet == nil || p.Mirror.SLOMet == nil {
			continue
		}
		n++
		if !*p.Live.SLOMet {
			lm++
		}
		if !*p.Mirror.SLOMet {
			mm++
		}
	}
	r := two.Rates(SLOAttainment, lm, n, mm, n, alpha, margin)
	if n > 0 {
		r.Base, r.Other = 1-r.Base, 1-r.Other
	}
	r.Estimate, r.Low, r.High = -r.Estimate, -r.High, -r.Low
	return fromResult(r)
}

// fromResult is a comparison of the engine as the canary verdict names it.
func fromResult(r two.Result) MetricVerdict {
	v := r.Outcome
	if v == two.NotEnough {
		v = VerdictNotEnough
	}
	return MetricVerdict{Name: r.Name, Live: r.Base, Mirror: r.Other, Estimate: r.Estimate,
		Low: r.Low, High: r.High, Margin: r.Margin, Count: r.Count, Verdict: v, PairsNeeded: r.Needed}
}

// String is a one-line form for logs and the CLI.
func (v Verdict) String() string {
	if v.Look < 0 {
		return fmt.Sprintf("%s (first look at %d pairs)", v.Outcome, v.NextLookAt)
	}
	return fmt.Sprintf("%s over %d pairs (look %d, each comparison at %.4f%%; furthest from equal: %s)",
		v.Outcome, v.Pairs, v.Look+1, 100*v.Level, v.Diverged)
}

// metricVerdictJSON is MetricVerdict on the wire: an interval end the pairs cannot bound yet
// (±Inf, which JSON cannot hold) is null.
type metricVerdictJSON struct {
	Name        string   `json:"name"`
	Live        float64  `json:"live"`
	Mirror      float64  `json:"mirror"`
	Estimate    *float64 `json:"estimate"`
	Low         *float64 `json:"low"`
	High        *float64 `json:"high"`
	Margin      float64  `json:"margin"`
	Count       int      `json:"count"`
	Verdict     string   `json:"verdict"`
	PairsNeeded int      `json:"pairs_needed"`
}

func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

func orInf(p *float64, sign int) float64 {
	if p == nil {
		return math.Inf(sign)
	}
	return *p
}

// MarshalJSON writes unbounded interval ends (and an unbounded estimate) as null.
func (m MetricVerdict) MarshalJSON() ([]byte, error) {
	return json.Marshal(metricVerdictJSON{Name: m.Name, Live: m.Live, Mirror: m.Mirror,
		Estimate: finite(m.Estimate), Low: finite(m.Low), High: finite(m.High), Margin: m.Margin,
		Count: m.Count, Verdict: m.Verdict, PairsNeeded: m.PairsNeeded})
}

// UnmarshalJSON reads null interval ends as −Inf (low) and +Inf (high, estimate).
func (m *MetricVerdict) UnmarshalJSON(b []byte) error {
	var w metricVerdictJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = MetricVerdict{Name: w.Name, Live: w.Live, Mirror: w.Mirror, Estimate: orInf(w.Estimate, 1),
		Low: orInf(w.Low, -1), High: orInf(w.High, 1), Margin: w.Margin, Count: w.Count,
		Verdict: w.Verdict, PairsNeeded: w.PairsNeeded}
	return nil
}
