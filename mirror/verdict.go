package mirror

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llmtap/llmtap/telemetry/compare"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Verdicts of a canary comparison. A verdict other than "not enough pairs yet" is a decision;
// better, same and not worse let a rollout go ahead, worse stops it.
const (
	VerdictBetter = compare.Better
	VerdictSame   = compare.Same
	// VerdictNotWorse is the gate's answer when every comparison's upper bound is inside its
	// margin but the two-sided question (same, better) is not settled yet: the mirror is no
	// worse than live by more than the margins.
	VerdictNotWorse  = compare.NotWorse
	VerdictWorse     = compare.Worse
	VerdictNotEnough = "not enough pairs yet"
	// VerdictInconclusive is the last look's verdict when a comparison was still undecided:
	// pairs past the last look are not used, so it is final (more looks or wider margins
	// would decide).
	VerdictInconclusive = "inconclusive"
)

// Defaults of VerdictOptions, chosen by the calibration in docs/canary.md
// (mirror/canarysim).
const (
	DefaultVerdictAlpha       = 0.05
	DefaultVerdictMargin      = 0.10
	DefaultVerdictTailMargin  = 1.0
	DefaultVerdictErrorMargin = 0.025
	DefaultVerdictFirstLook   = 200
	DefaultVerdictLooks       = 7
	// DefaultVerdictDrift and DefaultVerdictDriftMemory are the allowance for each upstream's
	// own drift of speed (VerdictOptions.Drift): SD 2 % on the log scale with a memory of 200
	// pairs, the own drift of the calibration's traffic (docs/canary.md).
	DefaultVerdictDrift       = 0.02
	DefaultVerdictDriftMemory = 200
)

// VerdictOptions are the equivalence margins and the look schedule of a canary verdict.
//
// The method: each pair is one request measured on both sides, so the comparisons are paired
// (telemetry/compare): the typical ratio mirror/live of a metric is the mean of the per-pair
// log ratios, the error rates are compared pair by pair, and the tail by the share of each
// side's requests above the pooled 99th percentile (an alarm: it can make a verdict worse but
// never holds one back). Their variance is estimated by batch means over the order the pairs
// were made in, so slow drift and bursts are counted.
//
// The verdict is taken only at looks, when a model's pairs reach FirstLook, 2·FirstLook,
// 4·FirstLook … (Looks of them); between looks the last look's verdict stands, so however
// often a gate polls it reads at most Looks verdicts. Each look spends Alpha/Looks of the
// false-worse budget over the lower ends of every comparison (GateShare of it on the gates',
// the rest on the alarms'; Bonferroni), and Alpha/Looks of the false-pass budget on each
// gate's upper end. The chance that any look of a model says worse when the truth is within
// every margin is at most Alpha, and the chance that it says not worse (or same, better) when
// a gating metric's truth is past its margin at most Alpha too (union bounds over looks and
// comparisons, and an intersection–union test over the gates, whatever the dependence between
// them), provided each interval holds its level. The upper ends of the speed ratios allow for
// each upstream's own drift (Drift) besides what the batch means see, so that they hold
// their level under the drift the calibration simulates; docs/canary.md's calibration
// measures what they achieve.
type VerdictOptions struct {
	// Alpha bounds the chance of a false "worse" over all looks, and apart from it the chance
	// of a false "not worse" (or same, better). Default 0.05.
	Alpha float64 `json:"alpha,omitempty"`
	// Margin is the equivalence margin of the typical ratios mirror/live of TTFT, ITL, request
	// latency and output tokens, each in its own unit: within 1±Margin they count as the same,
	// and a mirror 1+Margin times slower is as slow as the gate lets through. Default 0.10.
	Margin float64 `json:"margin,omitempty"`
	// TailMargin is the margin of the tail alarms: the mirror's share of requests above the
	// 99th percentile of both sides together, over live's share, may exceed 1 by this much
	// before it counts as worse. Default 1.0 (twice as many slow requests).
	TailMargin float64 `json:"tail_margin,omitempty"`
	// MarginMs, when positive, is a constant offset in ms between where the two sides are
	// measured (the live request through Caddy's proxy, the copy from llmtap's own client)
	// that is forgiven: it is taken off the mirror's TTFT and request latency of every pair
	// before the ratio. It never applies to ITL, which is per token. Default 0: none.
	MarginMs float64 `json:"margin_ms,omitempty"`
	// ErrorMargin is the equivalence margin of the error rates' difference (0.02 is two
	// percentage points), and of the SLO attainments'. Default 0.025: at 0.5 % errors on each
	// side, the count of errors in 800 pairs bounds a difference of 2.5 points at the gate's
	// level in nearly every run, 2 points in about 97 % (docs/canary.md's calibration).
	ErrorMargin float64 `json:"error_margin,omitempty"`
	// FirstLook is the number of a model's pairs at the first look. Default 200.
	FirstLook int `json:"first_look,omitempty"`
	// Looks is the number of looks; after the last the verdict no longer changes. Default 7
	// (200 … 12,800 pairs).
	Looks int `json:"looks,omitempty"`
	// Drift is the standard deviation, on the log scale, of the slow drift of each upstream's
	// own speed that the upper ends of the TTFT, ITL and request-latency ratios allow for
	// beyond what their batch means see (0.02: 2 %), and DriftMemory that drift's memory in
	// pairs (an AR(1) whose correlation falls by 1/e over it). Over the first few thousand
	// pairs such a drift is mostly an offset the pairs cannot show: without the allowance a
	// mirror at the margin in ITL went through in 149 of 1,000 runs at CV 0.3. It widens the
	// upper ends only, the ones whose error lets a change through; the lower ends keep the
	// batch means, so a 20 % regression is still caught by 800 pairs at CV 0.3 (a mirror
	// exactly at the margin is called worse in up to 17 % of runs there). The false-pass bound
	// holds for upstreams whose own drift is within the allowance; set a larger one for
	// upstreams whose speed wanders more, at the cost of passing later. Default 0.02 and 200;
	// a negative Drift allows none.
	Drift       float64 `json:"drift,omitempty"`
	DriftMemory int     `json:"drift_memory,omitempty"`
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
	if o.Drift == 0 {
		o.Drift = DefaultVerdictDrift
	}
	if o.DriftMemory <= 0 {
		o.DriftMemory = DefaultVerdictDriftMemory
	}
	return o
}

// speedDrift is the allowance of the options (with their defaults) for the speed ratios.
func (o VerdictOptions) speedDrift() compare.Drift {
	if o.Drift < 0 {
		return compare.Drift{}
	}
	return compare.Drift{SD: o.Drift, Memory: float64(o.DriftMemory)}
}

// GateShare is the share of the false-worse budget spent on the gates' lower ends (TTFT, ITL,
// the error rate and the SLO attainment); the alarms (request latency, output tokens, the
// tails) share the rest. The gates are what a rollout waits for, in both directions; the
// alarms are there for gross changes, which they catch at any share (docs/canary.md's
// calibration has the figures).
const GateShare = 2.0 / 3

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
	}{{"alpha", o.Alpha}, {"margin", o.Margin}, {"error_margin", o.ErrorMargin}} {
		if !(f.v >= 0 && f.v < 1) {
			errs = append(errs, fmt.Errorf("%s %v: must be in (0, 1) (0 means the default)", f.name, f.v))
		}
	}
	if !(o.TailMargin >= 0 && o.TailMargin <= 100) {
		errs = append(errs, fmt.Errorf("tail_margin %v: must be in (0, 100] (0 means the default)", o.TailMargin))
	}
	if math.IsNaN(o.MarginMs) || math.IsInf(o.MarginMs, 0) {
		errs = append(errs, fmt.Errorf("margin_ms %v: must be a number", o.MarginMs))
	}
	if !(o.Drift < 1) || math.IsInf(o.Drift, -1) {
		errs = append(errs, fmt.Errorf("drift %v: must be below 1 (0 means the default, negative none)", o.Drift))
	}
	if o.DriftMemory < 0 || o.DriftMemory > MaxVerdictPairs {
		errs = append(errs, fmt.Errorf("drift_memory %d: must be from 1 to %d pairs (0 means the default)", o.DriftMemory, MaxVerdictPairs))
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
	// Outcome is better, same, not worse, worse, "not enough pairs yet", or inconclusive
	// (undecided at the last look: final).
	Outcome string `json:"verdict"`
	// Pairs is the number of pairs the verdict was taken over (the last look's).
	Pairs int `json:"pairs"`
	// Look is the look it was taken at, numbered from 1 as every surface numbers it (0 before
	// the first); NextLookAt is the pair count of the next look, 0 after the last.
	Look       int `json:"look"`
	NextLookAt int `json:"next_look_at"`
	// Level is the confidence level of each gate comparison's interval at that look (its
	// lower end at its share of the false-worse budget, its upper end at its share of the
	// false-not-worse budget); an alarm's lower end is at a smaller share.
	Level float64 `json:"level"`
	// Diverged names the comparison furthest from equal (by its point estimate against its
	// margin); empty before the first look.
	Diverged string `json:"diverged"`
	// Comparisons are the metric comparisons of the look.
	Comparisons []MetricVerdict `json:"comparisons"`
}

// MetricVerdict is one comparison of a verdict: the engine's result, Base the live side and
// Other the mirror (in JSON "live" and "mirror").
type MetricVerdict = compare.Result

// verdictMetrics are the metrics compared: the typical ratio of each (paired, gating) and, for
// the time metrics, the tail alarm at the 99th percentile.
var verdictMetrics = []struct {
	metric string
	tail   bool // a "p99" tail alarm too
	offset bool // MarginMs applies
	alarm  bool // the typical ratio is an alarm, not a gate
	speed  bool // a measure of the upstream's speed: VerdictOptions.Drift applies
	get    func(Side) *float64
}{
	{"ttft_ms", true, true, false, true, func(s Side) *float64 { return s.TTFTMs }},
	{"itl_ms", true, false, false, true, func(s Side) *float64 { return s.ITLMs }},
	// Request latency and the output tokens follow how many tokens each side chose to
	// generate, which differs between two answers to the same prompt: they can make a verdict
	// worse, and do not hold it back (TTFT and ITL are what the upstream's speed is).
	{"request_latency_ms", true, true, true, true, func(s Side) *float64 { return s.LatencyMs }},
	{"output_tokens", false, false, true, false, func(s Side) *float64 { return s.OutputTokens }},
}

// Judge takes the verdict over one model's pairs (oldest first) at the last look their count
// has reached; pairs past the last look are not used.
func Judge(pairs []Pair, o VerdictOptions) Verdict {
	o = o.withDefaults()
	look := o.lookAt(len(pairs))
	v := Verdict{Outcome: VerdictNotEnough, Look: look + 1, Comparisons: []MetricVerdict{}}
	if look+1 < o.Looks {
		v.NextLookAt = o.LookAt(look + 1)
	}
	if look < 0 {
		return v
	}
	pairs = pairs[:o.LookAt(look)]
	v.Pairs = len(pairs)
	// A false worse comes from the lower end of any comparison, a false not worse (same,
	// better) from the upper ends of the gates: each look spends Alpha/Looks of the
	// false-worse budget, GateShare of it on the gates' lower ends and the rest on the
	// alarms', each share split evenly (a weighted Bonferroni), and Alpha/Looks of the
	// false-pass budget on every gate's upper end (no split: a pass needs every gate's upper
	// end inside, so a false pass needs the upper end of a gate whose truth is past its
	// margin to be wrong, an intersection–union test).
	gates, alarms := 1, 0 // error_rate
	for _, vm := range verdictMetrics {
		if vm.alarm {
			alarms++
		} else {
			gates++
		}
		if vm.tail {
			alarms++
		}
	}
	judged := slices.ContainsFunc(pairs, func(p Pair) bool { return p.Live.SLOMet != nil })
	if judged {
		gates++ // the SLO attainment is one comparison more
	}
	look1 := o.Alpha / float64(o.Looks)
	gateEnds := compare.Ends{Low: GateShare * look1 / float64(gates), High: look1}
	alarmEnds := compare.Ends{Low: (1 - GateShare) * look1 / float64(alarms), High: gateEnds.High}
	v.Level = 1 - gateEnds.Low - gateEnds.High
	for _, vm := range verdictMetrics {
		var live, mirror []float64
		for _, p := range pairs {
			// A metric is compared over the requests that succeeded on both sides.
			if !p.Live.OK || !p.Mirror.OK {
				continue
			}
			if l, m := vm.get(p.Live), vm.get(p.Mirror); l != nil && m != nil {
				mv := *m
				if vm.offset {
					mv = max(0, mv-o.MarginMs)
				}
				live, mirror = append(live, *l), append(mirror, mv)
			}
		}
		ends := gateEnds
		if vm.alarm {
			ends = alarmEnds
		}
		var drift compare.Drift
		if vm.speed {
			drift = o.speedDrift()
		}
		r := compare.PairedRatio(vm.metric+" p50", live, mirror, ends, o.Margin, drift)
		r.Alarm = vm.alarm
		v.Comparisons = append(v.Comparisons, r)
		if vm.tail {
			v.Comparisons = append(v.Comparisons, compare.SlowShare(vm.metric+" p99", live, mirror, 0.99, alarmEnds, o.TailMargin))
		}
	}
	v.Comparisons = append(v.Comparisons, compareErrors(pairs, gateEnds, o.ErrorMargin))
	if judged {
		v.Comparisons = append(v.Comparisons, compareAttainment(pairs, gateEnds, o.ErrorMargin))
	}
	var outcome string
	outcome, v.Diverged = compare.Combine(compare.WorseDominates, v.Comparisons)
	v.Outcome = outcome
	for i := range v.Comparisons {
		if v.Comparisons[i].Outcome == compare.NotEnough {
			v.Comparisons[i].Outcome = VerdictNotEnough
		}
	}
	if outcome == compare.NotEnough {
		v.Outcome = VerdictNotEnough
		if look == o.Looks-1 {
			v.Outcome = VerdictInconclusive // no later look will decide
		}
	}
	return v
}

// compareErrors compares the error rates, mirror minus live, pair by pair.
func compareErrors(pairs []Pair, e compare.Ends, margin float64) MetricVerdict {
	live, mirror := make([]bool, len(pairs)), make([]bool, len(pairs))
	for i, p := range pairs {
		live[i], mirror[i] = !p.Live.OK, !p.Mirror.OK
	}
	return compare.PairedRate("error_rate", live, mirror, e, margin)
}

// SLOAttainment is the name of the comparison of the SLO attainments.
const SLOAttainment = "slo_attainment"

// compareAttainment compares the share of the pairs judged by an SLO (Pair.SLO) that met it,
// live beside mirror, pair by pair by the shares that missed it (as the error rates are
// compared), written as attainments: Live and Mirror the attainments, the estimate and its
// interval mirror − live (a lower attainment is worse).
func compareAttainment(pairs []Pair, e compare.Ends, margin float64) MetricVerdict {
	var live, mirror []bool
	for _, p := range pairs {
		if p.Live.SLOMet == nil || p.Mirror.SLOMet == nil {
			continue
		}
		live, mirror = append(live, !*p.Live.SLOMet), append(mirror, !*p.Mirror.SLOMet)
	}
	r := compare.PairedRate(SLOAttainment, live, mirror, e, margin)
	if r.Count > 0 {
		r.Base, r.Other = 1-r.Base, 1-r.Other
	}
	// The misses' difference is the attainments' with the sign turned; the outcome, judged on
	// the misses (more misses is worse), stands.
	r.Estimate, r.Low, r.High = -r.Estimate, -r.High, -r.Low
	return r
}

// String is a one-line form for logs and the CLI.
func (v Verdict) String() string {
	if v.Look < 1 {
		return fmt.Sprintf("%s (first look at %d pairs)", v.Outcome, v.NextLookAt)
	}
	return fmt.Sprintf("%s over %d pairs (look %d, each gate comparison at %.4f%%; furthest from equal: %s)",
		v.Outcome, v.Pairs, v.Look, 100*v.Level, v.Diverged)
}
