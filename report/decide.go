package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Decisions are what a report decides from a run's records, beside its figures: the canary
// verdict of the mirror pairs the records hold, and the attainment of SLOs.
type Decisions struct {
	// Canary holds one verdict per run and model; empty when no run holds live and mirror
	// records of the same request.
	Canary []CanaryRow `json:"canary,omitempty"`
	// SLO holds the attainment per run, class, model and tenant; empty without SLOs.
	SLO []SLORow `json:"slo,omitempty"`
	// SLOs are the objectives the attainment was judged by, and SLOTarget the attainment
	// objective the burn rates are measured against.
	SLOs      []stats.SLO `json:"slo_objectives,omitempty"`
	SLOTarget float64     `json:"slo_target,omitempty"`
}

// CanaryRow is one model's canary verdict over a run's live/mirror pairs.
type CanaryRow struct {
	// Run names the run.
	Run string `json:"run"`
	mirror.ModelVerdict
	// Live counts the model's live records; Paired those with a mirror record of the same
	// request id (the records do not say why the others were not copied: not in the sample,
	// or skipped).
	Live   int `json:"live"`
	Paired int `json:"paired"`
}

// Canary pairs the live and mirror records of run (same request id, classes live and
// mirror) as the proxy's Pairer does, feeding them to a Pairer in the order they ended, and
// returns each model's verdict with the options o (the handler's mirror.verdict). With slos
// (the report's SLOs), both records of each pair are judged by them with goodput's rule and the
// verdict compares the attainments (mirror.SLOAttainment). No pairs, no rows.
func Canary(run *Run, o mirror.VerdictOptions, slos []stats.SLO) []CanaryRow {
	var recs []*record.Record
	mirrored := map[string]bool{}
	live := map[string]int{}
	for _, r := range run.Records {
		switch r.Class {
		case record.ClassMirror:
			mirrored[r.RequestID] = true
		case record.ClassLive:
			live[r.Model]++
		default:
			continue
		}
		recs = append(recs, r)
	}
	if len(mirrored) == 0 {
		return nil
	}
	// The proxy's Pairer sees a record when it is finalized, after the exchange ended.
	end := func(r *record.Record) time.Time {
		return r.Start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	}
	slices.SortStableFunc(recs, func(a, b *record.Record) int { return end(a).Compare(end(b)) })
	p := mirror.NewPairer(1, len(mirrored))
	p.SetVerdict(run.Name, o)
	if len(slos) > 0 {
		p.SetSLO(slo.NewJudge("report", slos))
	}
	for id := range mirrored {
		p.Expect(id)
	}
	for _, r := range recs {
		p.Consume(r)
	}
	paired := map[string]int{}
	for _, r := range recs {
		if r.Class == record.ClassLive && mirrored[r.RequestID] {
			paired[r.Model]++
		}
	}
	var out []CanaryRow
	for _, v := range p.Verdicts() {
		out = append(out, CanaryRow{Run: run.Name, ModelVerdict: v, Live: live[v.Model], Paired: paired[v.Model]})
	}
	return out
}

// DecideOptions say how a report decides: the canary verdict's margins and looks, and the
// SLOs with their attainment objective.
type DecideOptions struct {
	// Verdict is the canary verdict's options, as the handler's mirror.verdict sets them.
	Verdict mirror.VerdictOptions
	// SLOs are the objectives (AIPerf's --goodput syntax, stats.ParseSLOs); none: no SLO
	// attainment.
	SLOs []stats.SLO
	// SLOTarget is the attainment objective burn rates are measured against. Default
	// slo.DefaultTarget (0.99).
	SLOTarget float64
}

// Decide fills rep.Decisions from every run's records.
func (rep *Report) Decide(o DecideOptions) {
	if o.SLOTarget <= 0 || o.SLOTarget >= 1 {
		o.SLOTarget = slo.DefaultTarget
	}
	d := Decisions{}
	if len(o.SLOs) > 0 {
		d.SLOs, d.SLOTarget = o.SLOs, o.SLOTarget
	}
	for _, run := range rep.Runs {
		d.Canary = append(d.Canary, Canary(run, o.Verdict, o.SLOs)...)
		d.SLO = append(d.SLO, SLOAttainment(run, o.SLOs, o.SLOTarget)...)
	}
	rep.Decisions = d
}

// SLORow is the attainment of the SLOs by one run's requests of one class, model and tenant.
type SLORow struct {
	Run    string `json:"run"`
	Class  string `json:"class"`
	Model  string `json:"model"`
	Tenant string `json:"tenant"`
	// Requests counts the requests, failed ones included; Good those that met every objective.
	Requests int `json:"requests"`
	Good     int `json:"good"`
	// Met counts, per objective (its metric tag), the requests that met it.
	Met map[string]int `json:"met"`
	// Attainment is Met per objective, and "all" Good, over Requests.
	Attainment map[string]float64 `json:"attainment"`
	// BurnRate is (1 − attainment of all) / (1 − the target).
	BurnRate float64 `json:"burn_rate"`
}

// AttainAll is the key of Attainment for every objective at once (goodput's good requests).
const AttainAll = "all"

// SLOAttainment counts, per class, model and tenant of run, the requests meeting each
// objective and all of them, with the rules of goodput (stats.MeetsEach: a failed request or
// a missing value meets none), and their burn rate against target.
func SLOAttainment(run *Run, slos []stats.SLO, target float64) []SLORow {
	if len(slos) == 0 {
		return nil
	}
	type key struct{ class, model, tenant string }
	rows := map[key]*SLORow{}
	met := make([]bool, len(slos))
	for _, r := range run.Records {
		k := key{r.Class, r.Model, r.Tenant}
		row := rows[k]
		if row == nil {
			row = &SLORow{Run: run.Name, Class: k.class, Model: k.model, Tenant: k.tenant, Met: map[string]int{}}
			rows[k] = row
		}
		row.Requests++
		if stats.MeetsEach(r, slos, met) {
			row.Good++
		}
		for i, s := range slos {
			row.Met[s.Metric] += b2i(met[i])
		}
	}
	out := make([]SLORow, 0, len(rows))
	for _, row := range rows {
		row.Attainment = map[string]float64{AttainAll: float64(row.Good) / float64(row.Requests)}
		for m, n := range row.Met {
			row.Attainment[m] = float64(n) / float64(row.Requests)
		}
		row.BurnRate = (1 - row.Attainment[AttainAll]) / (1 - target)
		out = append(out, *row)
	}
	slices.SortFunc(out, func(a, b SLORow) int {
		return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Tenant, b.Tenant))
	})
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteText writes the decisions for a console: each canary verdict with its comparisons, and
// the SLO attainment per run, class, model and tenant with its burn rate.
func (d Decisions) WriteText(w io.Writer) {
	for _, c := range d.Canary {
		fmt.Fprintf(w, "canary verdict, %s: ", c.Run)
		WriteVerdicts(w, []mirror.ModelVerdict{c.ModelVerdict}, mirror.Counters{})
		fmt.Fprintf(w, "  %d of %d live requests have a mirror record\n", c.Paired, c.Live)
	}
	if len(d.SLO) == 0 {
		return
	}
	var objs []string
	for _, s := range d.SLOs {
		objs = append(objs, s.String())
	}
	fmt.Fprintf(w, "SLO attainment (%s; target %g):\n", strings.Join(objs, ", "), d.SLOTarget)
	for _, r := range d.SLO {
		fmt.Fprintf(w, "  %s %s %s tenant %q: %d of %d good (%.2f%%, burn rate %.2f)", r.Run, r.Class, r.Model, r.Tenant, r.Good, r.Requests, 100*r.Attainment[AttainAll], r.BurnRate)
		for _, s := range d.SLOs {
			fmt.Fprintf(w, "; %s %.2f%%", s.Metric, 100*r.Attainment[s.Metric])
		}
		fmt.Fprintln(w)
	}
}

// WriteVerdicts writes one line per model's canary verdict and the comparisons that decided
// it, then, when the counters sampled live requests, the share the mirror skipped and why.
func WriteVerdicts(w io.Writer, vs []mirror.ModelVerdict, c mirror.Counters) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "no pairs yet: is mirroring configured and are live requests coming in?")
	}
	for _, v := range vs {
		fmt.Fprintf(w, "%s: %s\n", v.Model, v.Verdict)
		for _, m := range v.Comparisons {
			if m.Count == 0 {
				continue
			}
			fmt.Fprintf(w, "  %-24s live %10.3f  mirror %10.3f  estimate %7.3f  [%.3f, %.3f]  margin %.3g  %s", m.Name, m.Base, m.Other, m.Estimate, m.Low, m.High, m.Margin, m.Outcome)
			if m.Outcome == mirror.VerdictNotEnough && m.Needed > 0 {
				fmt.Fprintf(w, " (about %d pairs needed)", m.Needed)
			}
			fmt.Fprintln(w)
		}
	}
	if share, ok := api.SkippedShare(c); ok {
		var why []string
		for r, n := range c.Skipped {
			if n > 0 {
				why = append(why, fmt.Sprintf("%s %d", r, n))
			}
		}
		slices.Sort(why)
		fmt.Fprintf(w, "mirrored %d of %d sampled live requests; %.2f%% skipped", c.Sent, c.Sampled, 100*share)
		if len(why) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(why, ", "))
		}
		fmt.Fprintln(w)
	}
}
