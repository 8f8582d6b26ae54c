package api

import (
	"context"
	"errors"
	"math"

	"connectrpc.com/connect"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/compare"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// The read RPCs over the mirror and the SLO tracker: the documents of GET /llmtap/mirror and
// GET /llmtap/slo in the Connect API's messages.

// flush delivers the records of requests that ended before now to the sinks (the mirror's
// pairer and the SLO tracker among them), as the JSON routes do before they read.
func (s *Service) flush() {
	if t := s.host().Tap(); t != nil {
		t.Flush()
	}
}

// MirrorStatus returns the mirror's counters, gate, pairs summary and canary verdicts.
func (s *Service) MirrorStatus(ctx context.Context, req *connect.Request[llmtapv1.MirrorStatusRequest]) (*connect.Response[llmtapv1.MirrorStatusResponse], error) {
	s.flush()
	doc := s.host().Mirror()
	if doc == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("mirroring is not available here"))
	}
	res := MirrorStatusProto(*doc)
	if m := req.Msg.GetModel(); m != "" {
		pairs := res.Pairs.Models[:0]
		for _, p := range res.Pairs.Models {
			if p.Model == m {
				pairs = append(pairs, p)
			}
		}
		res.Pairs.Models = pairs
		verdicts := res.Verdicts[:0]
		for _, v := range res.Verdicts {
			if v.Model == m {
				verdicts = append(verdicts, v)
			}
		}
		res.Verdicts = verdicts
	}
	return connect.NewResponse(res), nil
}

// SLOStatus returns the attainment of every (SLO, model).
func (s *Service) SLOStatus(ctx context.Context, req *connect.Request[llmtapv1.SLOStatusRequest]) (*connect.Response[llmtapv1.SLOStatusResponse], error) {
	tr := s.host().SLO()
	if tr == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("this host tracks no SLOs"))
	}
	s.flush()
	name, model := req.Msg.GetSlo(), req.Msg.GetModel()
	res := &llmtapv1.SLOStatusResponse{Dropped: tr.Dropped()}
	for _, r := range tr.Reports() {
		if (name == "" || r.SLO == name) && (model == "" || r.Model == model) {
			res.Reports = append(res.Reports, sloReportProto(&r))
		}
	}
	return connect.NewResponse(res), nil
}

// MirrorStatusProto converts the document of GET /llmtap/mirror.
func MirrorStatusProto(doc MirrorDoc) *llmtapv1.MirrorStatusResponse {
	c := doc.Counters
	res := &llmtapv1.MirrorStatusResponse{
		Counters: &llmtapv1.MirrorCounters{Sampled: c.Sampled, Sent: c.Sent, Completed: c.Completed,
			Failed: c.Failed, Cut: c.Cut, Skipped: c.Skipped, InFlight: c.InFlight},
		Gate: &llmtapv1.MirrorGate{Paused: doc.Gate.Paused, Reason: doc.Gate.Reason,
			Since: timeProto(doc.Gate.Since), Pauses: doc.Gate.Pauses},
		Pairs: &llmtapv1.MirrorPairs{PairsTotal: doc.Pairs.Pairs, Pending: int64(doc.Pairs.Pending),
			Unpaired: doc.Pairs.Unpaired, Window: int64(doc.Pairs.Window)},
	}
	if share, ok := SkippedShare(c); ok {
		res.Counters.SkippedShare = &share
	}
	for _, m := range doc.Pairs.Models {
		res.Pairs.Models = append(res.Pairs.Models, &llmtapv1.MirrorModelPairs{
			Model: m.Model, Pairs: int64(m.Pairs), BothOk: int64(m.BothOK),
			TtftMs: comparisonProto(m.TTFT), ItlMs: comparisonProto(m.ITL), RequestLatencyMs: comparisonProto(m.Latency),
		})
	}
	for i := range doc.Verdicts {
		res.Verdicts = append(res.Verdicts, verdictProto(&doc.Verdicts[i]))
	}
	return res
}

// SkippedShare is the share of the sampled live requests the mirror did not copy (over the
// in-flight cap, paused, body too large, …); false before any request was sampled.
func SkippedShare(c mirror.Counters) (float64, bool) {
	if c.Sampled == 0 {
		return 0, false
	}
	var skipped uint64
	for _, n := range c.Skipped {
		skipped += n
	}
	return float64(skipped) / float64(c.Sampled), true
}

func comparisonProto(c mirror.Comparison) *llmtapv1.MirrorComparison {
	return &llmtapv1.MirrorComparison{
		Count:  int64(c.Count),
		Live:   &llmtapv1.Quantiles{P50: c.Live.P50, P99: c.Live.P99},
		Mirror: &llmtapv1.Quantiles{P50: c.Mirror.P50, P99: c.Mirror.P99}, DiffP50: c.DiffP50,
	}
}

// verdictProto converts one model's canary verdict.
func verdictProto(v *mirror.ModelVerdict) *llmtapv1.MirrorVerdict {
	p := &llmtapv1.MirrorVerdict{
		Model: v.Model, Verdict: v.Outcome, Pairs: int64(v.Pairs), Look: int32(v.Look),
		NextLookAt: int64(v.NextLookAt), Level: v.Level, Diverged: v.Diverged,
	}
	for _, m := range v.Comparisons {
		p.Comparisons = append(p.Comparisons, &llmtapv1.MirrorMetricVerdict{
			Name: m.Name, Live: m.Base, Mirror: m.Other,
			Estimate: compare.Finite(m.Estimate), Low: compare.Finite(m.Low), High: compare.Finite(m.High),
			Margin: m.Margin, Count: int64(m.Count), Verdict: m.Outcome, PairsNeeded: int64(m.Needed),
			Difference: m.Difference,
		})
	}
	return p
}

// positive is x, or nil (absent) for a threshold the SLO does not set (0).
func positive(x float64) *float64 {
	if x <= 0 {
		return nil
	}
	return &x
}

// sloReportProto converts one (SLO, model) report.
func sloReportProto(r *slo.Report) *llmtapv1.SLOReport {
	p := &llmtapv1.SLOReport{
		Slo: r.SLO, Model: r.Model, Target: r.Target,
		TtftMs: positive(r.Thresholds.TTFTMs), ItlMs: positive(r.Thresholds.ITLMs), LatencyMs: positive(r.Thresholds.LatencyMs),
		Total: sloWindowProto(&r.Total),
	}
	for i := range r.Windows {
		p.Windows = append(p.Windows, sloWindowProto(&r.Windows[i]))
	}
	return p
}

func sloWindowProto(w *slo.Window) *llmtapv1.SLOWindow {
	return &llmtapv1.SLOWindow{Window: w.Window, Seconds: w.Seconds, Requests: w.Requests, Good: w.Good,
		Attainment: w.Attainment, Goodput: w.Goodput, BurnRate: w.BurnRate}
}

// MirrorCountersFromProto is MirrorStatus's counters as the mirror reports them, for clients
// (llmtap canary) that read the Connect API and print what the JSON route's readers print.
func MirrorCountersFromProto(c *llmtapv1.MirrorCounters) mirror.Counters {
	return mirror.Counters{Sampled: c.GetSampled(), Sent: c.GetSent(), Completed: c.GetCompleted(),
		Failed: c.GetFailed(), Cut: c.GetCut(), Skipped: c.GetSkipped(), InFlight: c.GetInFlight()}
}

// MirrorVerdictFromProto is a MirrorStatus verdict as the mirror reports it: an interval end
// (or estimate) that is absent, unbounded, is −Inf (low) or +Inf (high, estimate), as the JSON
// route's null reads back.
func MirrorVerdictFromProto(p *llmtapv1.MirrorVerdict) mirror.ModelVerdict {
	v := mirror.ModelVerdict{Model: p.GetModel(), Verdict: mirror.Verdict{
		Outcome: p.GetVerdict(), Pairs: int(p.GetPairs()), Look: int(p.GetLook()), NextLookAt: int(p.GetNextLookAt()),
		Level: p.GetLevel(), Diverged: p.GetDiverged(), Comparisons: make([]mirror.MetricVerdict, 0, len(p.GetComparisons())),
	}}
	orInf := func(x *float64, sign int) float64 {
		if x == nil {
			return math.Inf(sign)
		}
		return *x
	}
	for _, m := range p.GetComparisons() {
		v.Comparisons = append(v.Comparisons, mirror.MetricVerdict{Name: m.GetName(), Base: m.GetLive(), Other: m.GetMirror(),
			Estimate: orInf(m.Estimate, 1), Low: orInf(m.Low, -1), High: orInf(m.High, 1), Margin: m.GetMargin(),
			Count: int(m.GetCount()), Outcome: m.GetVerdict(), Needed: int(m.GetPairsNeeded()), Difference: m.GetDifference()})
	}
	return v
}
