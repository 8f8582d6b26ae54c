package llmtap_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// The tests of this file read each Connect surface beside the JSON admin route it mirrors and
// map the Connect message back to the route's Go type field by field, independently of
// package api's conversion, so that a field the conversion drops, renames or turns from
// unknown into 0 makes the two differ.

// recordFromProto is a Connect record as the JSON route's record.
func recordFromProto(p *llmtapv1.Record) record.Record {
	r := record.Record{
		RequestID: p.RequestId, Class: p.Class, Model: p.Model, Path: p.Path, API: p.Api, Stream: p.Stream,
		Status: int(p.Status), Error: p.Error, ErrorMsg: p.ErrorMessage, Finish: p.FinishReason,
		Start: p.Start.AsTime(), SessionID: p.SessionId, Tenant: p.Tenant,
		HeadersMs: p.HeadersMs, TTFTMs: p.TtftMs, TTFOMs: p.TtfoMs, TTSTMs: p.TtstMs,
		RequestLatencyMs: p.RequestLatencyMs, ITLMs: p.ItlMs, InterChunkMs: p.InterChunkMs,
		InterChunkDropped: int(p.InterChunkDropped), DurationMs: p.DurationMs,
		InputTokens: p.InputTokens, InputTokensSource: p.InputTokensSource,
		OutputTokens: p.OutputTokens, OutputTokensSource: p.OutputTokensSource,
		ReasoningTokens: p.ReasoningTokens, CachedTokens: p.CachedTokens, CacheWriteTokens: p.CacheWriteTokens,
		UsageOutputTokens: p.UsageOutputTokens,
		ContentEvents:     int(p.ContentEvents), Events: int(p.Events), Malformed: int(p.MalformedEvents),
		Oversized: int(p.OversizedEvents), Choices: int(p.Choices), ToolCalls: p.ToolCalls, Refusal: p.Refusal,
		Bytes: p.Bytes, BytesFromClient: p.BytesFromClient, DecodedBytes: p.DecodedBytes,
		DecodeStopped: p.DecodeStopped, UsageInjection: p.UsageInjection, Tokenizer: p.Tokenizer,
	}
	if g := p.Gpu; g != nil {
		r.GPU = &record.GPUUsage{UtilPercent: g.UtilizationPercent, PowerW: g.PowerWatts, EnergyJ: g.EnergyJoules,
			GPUSeconds: g.GpuSeconds, CoveredMs: g.CoveredMs, GPUs: int(g.Gpus)}
	}
	if c := p.Cost; c != nil {
		r.Cost = &record.Cost{Total: c.Total, PerMillionTokens: c.PerMillionTokens, Basis: c.Basis}
	}
	if c := p.ListCost; c != nil {
		r.ListCost = &record.Cost{Total: c.Total, PerMillionTokens: c.PerMillionTokens, Basis: c.Basis}
	}
	if s := p.ServerTimings; s != nil {
		r.Server = &record.ServerTimings{Format: s.Format, QueueMs: s.QueueMs, InferenceMs: s.InferenceMs,
			PromptEvalCount: s.PromptEvalCount, EvalCount: s.EvalCount, LoadMs: s.LoadMs,
			PromptEvalMs: s.PromptEvalMs, EvalMs: s.EvalMs, TotalMs: s.TotalMs}
	}
	if s := p.TimeSplit; s != nil {
		r.Split = &record.TimeSplit{ConnectMs: s.ConnectMs, ProxyMs: s.ProxyMs, SendMs: s.SendMs,
			UpstreamHeadersMs: s.UpstreamHeadersMs, UpstreamTTFTMs: s.UpstreamTtftMs,
			QueueMs: s.QueueMs, QueueSource: s.QueueSource, LoadMs: s.LoadMs,
			PrefillMs: s.PrefillMs, PrefillSource: s.PrefillSource, DecodeMs: s.DecodeMs, DecodeSource: s.DecodeSource,
			InferenceMs: s.InferenceMs, ServerTTFTMs: s.ServerTtftMs, NetworkMs: s.NetworkMs, TTFTDisagree: s.TtftDisagree}
	}
	return r
}

// usageFromProto is a Connect usage row as the JSON summary's.
func usageFromProto(u *llmtapv1.Usage) stats.Usage {
	return stats.Usage{UsageKey: stats.UsageKey{Tenant: u.Tenant, Model: u.Model, Class: u.Class},
		Requests: u.Requests, Errors: u.Errors, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens, CacheWriteInputTokens: u.CacheWriteInputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens, EnergyJ: u.GpuEnergyJoules, GPUSeconds: u.GpuSeconds, Cost: u.Cost,
		ListCost: u.ListCost, CostPerMillionTokens: u.CostPerMillionTokens, ListCostPerMillionTokens: u.ListCostPerMillionTokens}
}

// sameSum reports whether two sums of the same floats, added in different orders, agree.
func sameSum(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }

// TestConnectTenantsAndRecords sends requests of three tenants (one of them none) through
// Caddy, with a fake GPU sampled every 10 ms and a price per GPU-hour, to a mock that reports
// cached and reasoning tokens, and reads Summary and RecentRecords through the Connect API on
// the admin listener: every record equals the one GET /llmtap/requests gives, field by field
// (tenant, tokens by kind, GPU share, cost, time split, unknown figures unknown); the usage
// rows equal the summary's, and each tenant's row is the sum of its records.
func TestConnectTenantsAndRecords(t *testing.T) {
	llmtap.ResetTenantLabels()
	model := ownName("connect-tenant-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model); llmtap.ResetTenantLabels() })
	var fs fakeGPUs
	defer llmtap.SetGPUOpener(fs.open)()
	up := startUpstream(t, mock.Config{TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond, Reasoning: 1, CachedTokens: 3})
	p, _ := loadProxy(t, apiGlobals+"\n\tllmtap {\n\t\tgpu {\n\t\t\tinterval 10ms\n\t\t\tprice_per_gpu_hour 2.5\n\t\t}\n"+
		"\t\tlist_price connect-tenant-* {\n\t\t\tinput 2\n\t\t\toutput 8\n\t\t\tcached_input 0.5\n\t\t}\n\t}",
		site{body: "\tllmtap_api\n\tllmtap {\n\t\ttenant header X-Tenant\n\t}\n\treverse_proxy " + up.addr})
	want := map[string]int{"team-a": 3, "team-b": 2, "": 1} // "": an empty X-Tenant, no tenant
	sendTenants(t, newClient(t), p.sites[0]+"/v1/chat/completions", model, []string{"team-a", "team-b", "", "team-a", "team-b", "team-a"})
	jsonRecs := p.records(t) // waits for the pipeline

	h1, _ := h1Client(t)
	cl := llmtapv1connect.NewTapServiceClient(h1, p.admin)
	recs, err := cl.RecentRecords(t.Context(), connect.NewRequest(&llmtapv1.RecentRecordsRequest{Model: model}))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Msg.Records) != 6 {
		t.Fatalf("%d Connect records of %s, want 6", len(recs.Msg.Records), model)
	}
	sums := map[string]*stats.Usage{}
	var withCost int
	for _, pr := range recs.Msg.Records {
		got := recordFromProto(pr)
		jr, ok := jsonRecs[got.RequestID]
		if !ok {
			t.Fatalf("record %s is not on GET /llmtap/requests", got.RequestID)
		}
		if !got.Start.Equal(jr.Start) {
			t.Errorf("%s: start %v, the JSON route's %v", got.RequestID, got.Start, jr.Start)
		}
		got.Start, jr.Start = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, jr) {
			gb, _ := json.Marshal(got)
			jb, _ := json.Marshal(jr)
			t.Errorf("%s: the Connect record differs from the JSON route's:\nconnect %s\njson    %s", got.RequestID, gb, jb)
		}
		if got.CachedTokens != 3 || got.ReasoningTokens != 1 || got.Split == nil || got.Split.UpstreamTTFTMs == nil {
			t.Errorf("%s: cached %d, reasoning %d, split %+v: want the mock's 3 and 1 and the proxy's time split", got.RequestID, got.CachedTokens, got.ReasoningTokens, got.Split)
		}
		if got.ListCost == nil || got.ListCost.Basis != "list_price" || got.ListCost.Total <= 0 {
			t.Errorf("%s: list cost %+v, want one at the list price of connect-tenant-*", got.RequestID, got.ListCost)
		}
		if got.Cost != nil {
			withCost++
			if got.Cost.Basis != "gpu_hour" || got.GPU == nil || !sameSum(got.Cost.Total, got.GPU.GPUSeconds/3600*2.5) {
				t.Errorf("%s: cost %+v of GPU %+v: want gpu_hour at 2.5 per GPU-hour", got.RequestID, got.Cost, got.GPU)
			}
		}
		u := sums[got.Tenant]
		if u == nil {
			u = &stats.Usage{}
			sums[got.Tenant] = u
		}
		u.Requests++
		u.InputTokens += got.InputTokens
		u.OutputTokens += got.OutputTokens
		u.CachedInputTokens += got.CachedTokens
		u.ReasoningOutputTokens += got.ReasoningTokens
		if got.GPU != nil {
			u.EnergyJ += got.GPU.EnergyJ
			u.GPUSeconds += got.GPU.GPUSeconds
		}
		if got.Cost != nil {
			u.Cost += got.Cost.Total
		}
		if got.ListCost != nil {
			u.ListCost += got.ListCost.Total
		}
	}
	if withCost == 0 {
		t.Error("no record has a cost: the fake GPU's samples covered none")
	}

	// Usage rows: Connect against the JSON summary, and against the records.
	sum, err := cl.Summary(t.Context(), connect.NewRequest(&llmtapv1.SummaryRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Usage []stats.Usage `json:"usage"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/summary"), &doc); err != nil {
		t.Fatal(err)
	}
	jsonRows := map[string]stats.Usage{}
	for _, u := range doc.Summary.Usage {
		if u.Model == model {
			jsonRows[u.Tenant] = u
		}
	}
	rows := map[string]stats.Usage{}
	for _, pu := range sum.Msg.Usage {
		if pu.Model == model {
			rows[pu.Tenant] = usageFromProto(pu)
		}
	}
	if !reflect.DeepEqual(rows, jsonRows) {
		t.Errorf("Connect usage rows differ from the JSON summary's:\nconnect %+v\njson    %+v", rows, jsonRows)
	}
	if len(rows) != len(want) {
		t.Fatalf("usage rows for tenants %v, want %v", rows, want)
	}
	for tn, n := range want {
		u, s := rows[tn], sums[tn]
		if u.Class != record.ClassLive || u.Requests != int64(n) || s == nil || u.Requests != s.Requests || u.InputTokens != s.InputTokens ||
			u.OutputTokens != s.OutputTokens || u.CachedInputTokens != s.CachedInputTokens || u.ReasoningOutputTokens != s.ReasoningOutputTokens ||
			u.CachedInputTokens != int64(3*n) || !sameSum(u.EnergyJ, s.EnergyJ) || !sameSum(u.GPUSeconds, s.GPUSeconds) || !sameSum(u.Cost, s.Cost) || !sameSum(u.ListCost, s.ListCost) ||
			!sameSum(u.ListCostPerMillionTokens, s.ListCost/float64(s.InputTokens+s.OutputTokens)*1e6) {
			t.Errorf("tenant %q: usage row %+v, the records' sums %+v (%d requests)", tn, u, s, n)
		}
	}
}

// TestConnectMirrorAndSLO mirrors live traffic to a second mock with a canary verdict taken
// at 20 pairs, under an SLO, and reads MirrorStatus and SLOStatus through the Connect API
// beside GET /llmtap/mirror and GET /llmtap/slo: the counters, gate, pair comparisons and
// verdicts (the verdict, each comparison's interval, margin, count, with unbounded ends
// absent where the JSON has null) and every SLO window must be the same.
func TestConnectMirrorAndSLO(t *testing.T) {
	llmtap.ResetSLO()
	t.Cleanup(llmtap.ResetSLO)
	model := ownName("connect-mirror-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model) })
	up := startUpstream(t, mock.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, TailFraction: 0.3, TailFactor: 20, Seed: 5})
	mir := startUpstream(t, mock.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	p, _ := loadProxy(t, apiGlobals, site{body: fmt.Sprintf("\tllmtap_api\n\tllmtap {\n\t\tslo chat {\n\t\t\tttft 50ms\n\t\t\ttarget 90%%\n\t\t}\n"+
		"\t\tmirror http://%s {\n\t\t\tsample 100%%\n\t\t\tverdict {\n\t\t\t\tfirst_look 20\n\t\t\t\tlooks 1\n\t\t\t}\n\t\t}\n\t}\n\treverse_proxy %s", mir.addr, up.addr)})
	sendChats(t, newClient(t), p.sites[0], model, 24)
	// The copies finish after the live requests: wait until every one is paired.
	var doc api.MirrorDoc
	for deadline := time.Now().Add(10 * time.Second); ; {
		waitIdle(t)
		doc = api.MirrorDoc{}
		if err := json.Unmarshal(p.adminGet(t, "/llmtap/mirror"), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Counters.InFlight == 0 && doc.Pairs.Pending == 0 && doc.Counters.Sent == 24 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror not settled after 10 s: %+v", doc)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h1, _ := h1Client(t)
	for _, base := range []string{p.admin, p.sites[0]} {
		cl := llmtapv1connect.NewTapServiceClient(h1, base, connect.WithProtoJSON())
		res, err := cl.MirrorStatus(t.Context(), connect.NewRequest(&llmtapv1.MirrorStatusRequest{}))
		if err != nil {
			t.Fatalf("%s: MirrorStatus: %v", base, err)
		}
		got := mirrorDocFromProto(res.Msg)
		if !reflect.DeepEqual(got, doc) {
			gb, _ := json.Marshal(got)
			jb, _ := json.Marshal(doc)
			t.Errorf("%s: MirrorStatus differs from GET /llmtap/mirror:\nconnect %s\njson    %s", base, gb, jb)
		}
		if len(got.Verdicts) != 1 || got.Verdicts[0].Model != model || got.Verdicts[0].Pairs != 20 || len(got.Verdicts[0].Comparisons) == 0 {
			t.Errorf("%s: verdicts %+v, want %s's, taken at the look of 20 pairs", base, got.Verdicts, model)
		}
		var unbounded int
		for _, m := range res.Msg.GetVerdicts()[0].GetComparisons() {
			if m.High == nil {
				unbounded++
			}
		}
		if unbounded == 0 {
			t.Errorf("%s: every comparison bounded above at 20 pairs: the p99s cannot be", base)
		}
		if share := res.Msg.Counters.SkippedShare; share == nil || *share != 0 {
			t.Errorf("%s: skipped share %v, want 0 (every sampled request was mirrored)", base, share)
		}
		one, err := cl.MirrorStatus(t.Context(), connect.NewRequest(&llmtapv1.MirrorStatusRequest{Model: "no-such-model"}))
		if err != nil || len(one.Msg.Verdicts) != 0 || len(one.Msg.Pairs.Models) != 0 {
			t.Errorf("%s: MirrorStatus of another model: %v %v, want no verdict and no pairs", base, one, err)
		}
	}

	// SLOs: the live requests and their copies are counted (the mirror's class is not live:
	// only the live ones).
	var sloDoc api.SLODoc
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/slo"), &sloDoc); err != nil {
		t.Fatal(err)
	}
	cl := llmtapv1connect.NewTapServiceClient(h1, p.admin)
	res, err := cl.SLOStatus(t.Context(), connect.NewRequest(&llmtapv1.SLOStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	got := api.SLODoc{Dropped: res.Msg.Dropped}
	for _, r := range res.Msg.Reports {
		got.SLOs = append(got.SLOs, sloReportFromProto(r))
	}
	// The windows' seconds grow between the two reads: compare them apart (goodput is the
	// good requests over them).
	for _, r := range got.SLOs {
		for _, w := range append([]slo.Window{r.Total}, r.Windows...) {
			if w.Seconds <= 0 || !sameSum(w.Goodput*w.Seconds, float64(w.Good)) {
				t.Errorf("SLO %s window %q: goodput %v over %v s, want its %d good requests", r.SLO, w.Window, w.Goodput, w.Seconds, w.Good)
			}
		}
	}
	for _, d := range []*api.SLODoc{&got, &sloDoc} {
		for i := range d.SLOs {
			for _, w := range append([]*slo.Window{&d.SLOs[i].Total}, ptrs(d.SLOs[i].Windows)...) {
				w.Seconds, w.Goodput = 0, 0
			}
		}
	}
	if !reflect.DeepEqual(got, sloDoc) {
		gb, _ := json.Marshal(got)
		jb, _ := json.Marshal(sloDoc)
		t.Errorf("SLOStatus differs from GET /llmtap/slo:\nconnect %s\njson    %s", gb, jb)
	}
	var mine *slo.Report
	for i := range got.SLOs {
		if got.SLOs[i].Model == model {
			mine = &got.SLOs[i]
		}
	}
	if mine == nil || mine.SLO != "chat" || mine.Total.Requests != 24 || len(mine.Windows) == 0 || mine.Total.BurnRate == nil {
		t.Fatalf("SLO report of %s: %+v, want chat's, 24 live requests, rolling windows and a burn rate", model, mine)
	}
	if a := mine.Total.Attainment[slo.ObjTTFT]; a <= 0 || a >= 1 {
		t.Errorf("TTFT attainment %v: the mock's tail (30 %% of requests 20 times slower) should miss some, not all", a)
	}
	only, err := cl.SLOStatus(t.Context(), connect.NewRequest(&llmtapv1.SLOStatusRequest{Model: model}))
	if err != nil || len(only.Msg.Reports) != 1 || only.Msg.Reports[0].Model != model {
		t.Errorf("SLOStatus of %s: %v %v, want its one report", model, only, err)
	}
}

func ptrs[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

// mirrorDocFromProto is MirrorStatus as the JSON route's document.
func mirrorDocFromProto(p *llmtapv1.MirrorStatusResponse) api.MirrorDoc {
	c, g, ps := p.GetCounters(), p.GetGate(), p.GetPairs()
	doc := api.MirrorDoc{
		Counters: mirror.Counters{Sampled: c.Sampled, Sent: c.Sent, Completed: c.Completed, Failed: c.Failed, Skipped: c.Skipped, InFlight: c.InFlight},
		Gate:     mirror.GateState{Paused: g.Paused, Reason: g.Reason, Pauses: g.Pauses},
		Pairs:    mirror.Summary{Pairs: ps.PairsTotal, Pending: int(ps.Pending), Unpaired: ps.Unpaired, Window: int(ps.Window), Models: []mirror.ModelSummary{}},
		Verdicts: []mirror.ModelVerdict{},
	}
	if g.Since != nil {
		doc.Gate.Since = g.Since.AsTime()
	}
	cmp := func(c *llmtapv1.MirrorComparison) mirror.Comparison {
		return mirror.Comparison{Count: int(c.Count), Live: mirror.Quantiles{P50: c.Live.GetP50(), P99: c.Live.GetP99()},
			Mirror: mirror.Quantiles{P50: c.Mirror.GetP50(), P99: c.Mirror.GetP99()}, DiffP50: c.DiffP50}
	}
	for _, m := range ps.Models {
		doc.Pairs.Models = append(doc.Pairs.Models, mirror.ModelSummary{Model: m.Model, Pairs: int(m.Pairs), BothOK: int(m.BothOk),
			TTFT: cmp(m.TtftMs), ITL: cmp(m.ItlMs), Latency: cmp(m.RequestLatencyMs)})
	}
	for _, v := range p.Verdicts {
		doc.Verdicts = append(doc.Verdicts, api.MirrorVerdictFromProto(v))
	}
	return doc
}

// sloReportFromProto is an SLOStatus report as the JSON route's.
func sloReportFromProto(p *llmtapv1.SLOReport) slo.Report {
	win := func(w *llmtapv1.SLOWindow) slo.Window {
		return slo.Window{Window: w.Window, Seconds: w.Seconds, Requests: w.Requests, Good: w.Good,
			Attainment: w.Attainment, Goodput: w.Goodput, BurnRate: w.BurnRate}
	}
	r := slo.Report{SLO: p.Slo, Model: p.Model, Target: p.Target,
		Thresholds: slo.Thresholds{TTFTMs: p.GetTtftMs(), ITLMs: p.GetItlMs(), LatencyMs: p.GetLatencyMs()},
		Total:      win(p.Total)}
	for _, w := range p.Windows {
		r.Windows = append(r.Windows, win(w))
	}
	return r
}
