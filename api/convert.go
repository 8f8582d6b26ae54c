package api

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/load/guard"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// statProto converts a distribution.
func statProto(s stats.Stat) *llmtapv1.Stat {
	return &llmtapv1.Stat{
		Unit: s.Unit, Avg: s.Avg, Min: s.Min, Max: s.Max,
		P1: s.P1, P5: s.P5, P10: s.P10, P25: s.P25, P50: s.P50, P75: s.P75, P90: s.P90, P95: s.P95, P99: s.P99,
		Std: s.Std, Count: s.Count, Sum: s.Sum, Clamped: s.Clamped,
	}
}

// timeProto converts a time, leaving the zero time unset.
func timeProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// groupProto converts one summary group.
func groupProto(g *stats.GroupSummary) *llmtapv1.Group {
	p := &llmtapv1.Group{
		Model: g.Key.Model, Class: g.Key.Class, StatusClass: g.Key.StatusClass, Window: g.Window,
		Start: timeProto(g.Start), End: timeProto(g.End),
		Metrics:            make(map[string]*llmtapv1.Stat, len(g.Metrics)),
		Scalars:            make(map[string]*llmtapv1.Scalar, len(g.Scalars)),
		OutputTokenSources: g.Sources.OutputTokens,
		InputTokenSources:  g.Sources.InputTokens,
		Errors:             g.Errors,
	}
	for tag, s := range g.Metrics {
		p.Metrics[tag] = statProto(s)
	}
	for tag, s := range g.Scalars {
		p.Scalars[tag] = &llmtapv1.Scalar{Unit: s.Unit, Value: s.Value}
	}
	return p
}

// recordProto converts one request record.
func recordProto(r *record.Record) *llmtapv1.Record {
	return &llmtapv1.Record{
		RequestId: r.RequestID, Class: r.Class, Model: r.Model, Path: r.Path, Api: r.API,
		Stream: r.Stream, Status: int32(r.Status), Error: r.Error, ErrorMessage: r.ErrorMsg,
		FinishReason: r.Finish, Start: timeProto(r.Start), SessionId: r.SessionID,
		HeadersMs: r.HeadersMs, TtftMs: r.TTFTMs, TtfoMs: r.TTFOMs, TtstMs: r.TTSTMs,
		RequestLatencyMs: r.RequestLatencyMs, ItlMs: r.ITLMs,
		InterChunkMs: r.InterChunkMs, InterChunkDropped: int32(r.InterChunkDropped),
		DurationMs:  r.DurationMs,
		InputTokens: r.InputTokens, InputTokensSource: r.InputTokensSource,
		OutputTokens: r.OutputTokens, OutputTokensSource: r.OutputTokensSource,
		ReasoningTokens: r.ReasoningTokens, CachedTokens: r.CachedTokens,
		UsageOutputTokens: r.UsageOutputTokens,
		ContentEvents:     int32(r.ContentEvents), Events: int32(r.Events),
		MalformedEvents: int32(r.Malformed), Bytes: r.Bytes,
		Tenant: r.Tenant, CacheWriteTokens: r.CacheWriteTokens,
		Gpu: gpuUsageProto(r.GPU), Cost: costProto(r.Cost), ListCost: costProto(r.ListCost),
		Tokenizer:     r.Tokenizer,
		ServerTimings: serverTimingsProto(r.Server), TimeSplit: timeSplitProto(r.Split),
		OversizedEvents: int32(r.Oversized), Choices: int32(r.Choices), ToolCalls: r.ToolCalls, Refusal: r.Refusal,
		BytesFromClient: r.BytesFromClient, DecodedBytes: r.DecodedBytes, DecodeStopped: r.DecodeStopped,
		UsageInjection: r.UsageInjection,
	}
}

// gpuUsageProto converts a record's GPU usage; nil (no GPU sampled) stays nil.
func gpuUsageProto(g *record.GPUUsage) *llmtapv1.GPUUsage {
	if g == nil {
		return nil
	}
	return &llmtapv1.GPUUsage{UtilizationPercent: g.UtilPercent, PowerWatts: g.PowerW, EnergyJoules: g.EnergyJ,
		GpuSeconds: g.GPUSeconds, CoveredMs: g.CoveredMs, Gpus: int32(g.GPUs)}
}

// costProto converts a record's cost; nil (no price) stays nil.
func costProto(c *record.Cost) *llmtapv1.Cost {
	if c == nil {
		return nil
	}
	return &llmtapv1.Cost{Total: c.Total, PerMillionTokens: c.PerMillionTokens, Basis: c.Basis}
}

// serverTimingsProto converts the server's own timings; nil stays nil.
func serverTimingsProto(s *record.ServerTimings) *llmtapv1.ServerTimings {
	if s == nil {
		return nil
	}
	return &llmtapv1.ServerTimings{Format: s.Format, QueueMs: s.QueueMs, InferenceMs: s.InferenceMs,
		PromptEvalCount: s.PromptEvalCount, EvalCount: s.EvalCount, LoadMs: s.LoadMs,
		PromptEvalMs: s.PromptEvalMs, EvalMs: s.EvalMs, TotalMs: s.TotalMs}
}

// timeSplitProto converts a record's time split; nil stays nil, and each unknown figure stays
// absent (the optional fields share the record's pointers' meaning: nil is unknown, not 0).
func timeSplitProto(s *record.TimeSplit) *llmtapv1.TimeSplit {
	if s == nil {
		return nil
	}
	return &llmtapv1.TimeSplit{
		ConnectMs: s.ConnectMs, ProxyMs: s.ProxyMs, SendMs: s.SendMs,
		UpstreamHeadersMs: s.UpstreamHeadersMs, UpstreamTtftMs: s.UpstreamTTFTMs,
		QueueMs: s.QueueMs, QueueSource: s.QueueSource, LoadMs: s.LoadMs,
		PrefillMs: s.PrefillMs, PrefillSource: s.PrefillSource, DecodeMs: s.DecodeMs, DecodeSource: s.DecodeSource,
		InferenceMs: s.InferenceMs, ServerTtftMs: s.ServerTTFTMs, NetworkMs: s.NetworkMs,
		TtftDisagree: s.TTFTDisagree,
	}
}

// usageProto converts one usage row of the summary.
func usageProto(u *stats.Usage) *llmtapv1.Usage {
	return &llmtapv1.Usage{
		Tenant: u.Tenant, Model: u.Model, Class: u.Class, Requests: u.Requests, Errors: u.Errors,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens,
		GpuEnergyJoules: u.EnergyJ, GpuSeconds: u.GPUSeconds, Cost: u.Cost, ListCost: u.ListCost,
		CostPerMillionTokens: u.CostPerMillionTokens, ListCostPerMillionTokens: u.ListCostPerMillionTokens,
	}
}

// ShadowLoadProto converts a shadow load's status.
func ShadowLoadProto(s shadow.Status) *llmtapv1.ShadowLoad {
	return &llmtapv1.ShadowLoad{
		Name: s.Name, Mode: s.Mode, State: s.State, PauseReason: s.PauseReason,
		Rate: s.Rate, ConfigRate: s.ConfigRate, MaxRate: s.MaxRate, AchievedRate: s.AchievedRate,
		InFlight: s.InFlight, MaxInFlight: int32(s.MaxInFlight),
		Sent: s.Sent, Ok: s.OK, Errors: s.Errors, Dropped: s.Dropped, Pauses: s.Pauses, Resumes: s.Resumes,
		LagP50Ms: s.LagP50Ms, LagP99Ms: s.LagP99Ms, LagMaxMs: s.LagMaxMs,
	}
}

// ShadowStateProto converts the document of GET /llmtap/shadow.
func ShadowStateProto(doc ShadowDoc) *llmtapv1.ShadowState {
	st := &llmtapv1.ShadowState{
		Guard: guardProto(doc.Guard), ForgedMarkers: doc.ForgedMarkers,
		HardMaxRate: float64(doc.HardMaxRate), HardMaxInFlight: int32(doc.HardMaxInFlight),
	}
	for _, s := range doc.Shadows {
		st.Loads = append(st.Loads, ShadowLoadProto(s))
	}
	for i := range doc.PassiveHeadroom {
		st.PassiveHeadroom = append(st.PassiveHeadroom, passiveProto(&doc.PassiveHeadroom[i]))
	}
	return st
}

// passiveProto converts one passive headroom estimate, field for field.
func passiveProto(e *headroom.Estimate) *llmtapv1.PassiveHeadroom {
	p := &llmtapv1.PassiveHeadroom{
		Upstream: e.Upstream, TtftObjectiveMs: e.TTFTObjectiveMs, State: e.State,
		Requests: e.Requests, Windows: int32(e.Windows), WindowSeconds: e.WindowSeconds, Confidence: e.Confidence,
		KneeConcurrency: e.KneeConcurrency, BaseTtftMs: e.BaseTTFTMs, SlopeMsPerRequest: e.SlopeMsPerRequest,
		SloConcurrency: intervalProto(e.SLOConcurrency), SloRequestsPerSec: intervalProto(e.SLORequestsPerSec),
		CurrentConcurrency: e.CurrentConcurrency, CurrentRequestsPerSec: e.CurrentRequestsPerSec,
		RemainingConcurrency: intervalProto(e.RemainingConcurrency), RemainingRequestsPerSec: intervalProto(e.RemainingRequestsPerSec),
		Extrapolated: e.Extrapolated, QueueOnsetConcurrency: e.QueueOnsetConcurrency, KvLimitConcurrency: e.KVLimitConcurrency,
		KvCacheUsage: e.KVCacheUsage, Waiting: e.Waiting, Running: e.Running,
	}
	for _, l := range e.Levels {
		p.Levels = append(p.Levels, &llmtapv1.HeadroomLevel{Concurrency: l.Concurrency, Requests: l.Requests,
			TtftMs: l.TTFTMs, LatencyMs: l.LatencyMs, Waiting: l.Waiting, KvCacheUsage: l.KVCacheUsage})
	}
	return p
}

func intervalProto(i headroom.Interval) *llmtapv1.HeadroomInterval {
	return &llmtapv1.HeadroomInterval{Estimate: i.Estimate, Low: i.Low, High: i.High}
}

// guardProto converts the guard rails' state (nil: none).
func guardProto(g *guard.State) *llmtapv1.ShadowGuard {
	if g == nil {
		return nil
	}
	return &llmtapv1.ShadowGuard{
		Tripped: g.Tripped, Reason: g.Reason, Trips: g.Trips, Clears: g.Clears, TripsByReason: g.TripsByReason,
		LiveRequests: g.LiveRequests, LiveTtftP99Ms: g.LiveTTFTP99Ms, LiveErrorRate: g.LiveErrorRate,
		Since: timeProto(g.Since), ClearsAt: timeProto(g.ClearsAt),
	}
}

// RecordingProto describes a recorder, with the files it has open (accurate after a flush);
// origin is "runtime" or "config", started is zero for a configured recorder.
func RecordingProto(r *recorder.Recorder, origin string, started time.Time) *llmtapv1.Recording {
	st := r.Stats()
	return &llmtapv1.Recording{
		Dir: r.Options().Dir, Origin: origin, Files: r.Files(), Started: timeProto(started),
		// Dropped: records not written in full (a shed record lost its trace and payload lines).
		Written: st.Written, Dropped: st.Dropped + st.Failed + st.Shed, Filtered: st.Filtered, Errors: st.Errors,
		SessionsUntracked: st.SessionsUntracked, SessionsExpired: st.SessionsExpired,
		PayloadsSkipped: payloadsSkipped(r.Options().Payloads, st),
	}
}

// payloadsSkipped is a recorder's payload skips by reason, nil when it writes no payloads.
func payloadsSkipped(payloads bool, st recorder.Stats) map[string]uint64 {
	if !payloads {
		return nil
	}
	return map[string]uint64{recorder.SkipTooLarge: st.SkippedTooLarge, recorder.SkipNotObject: st.SkippedNotObject}
}

// timelineWindowProto converts one window of the timeline; recordsDropped is the engine's
// count of dropped records.
func timelineWindowProto(w *timeline.Window, recordsDropped uint64) *llmtapv1.TimelineWindow {
	d := durationpb.New(time.Duration(w.DurationMs * float64(time.Millisecond)))
	p := &llmtapv1.TimelineWindow{
		Seq: w.Seq, Start: timestamppb.New(w.Start), Duration: d, Span: d,
		Source: SourceTimeline, Final: w.Final, RecordsDropped: recordsDropped, Late: w.Late,
	}
	if w.InFlight != nil {
		p.InFlight = *w.InFlight
	}
	for i := range w.Series {
		s := &w.Series[i]
		inFlight := s.InFlight
		p.Series = append(p.Series, &llmtapv1.Series{
			Model: s.Model, Class: s.Class, Requests: s.Requests, Errors: s.Errors,
			ErrorsByClass: s.ErrorsByClass, InFlight: &inFlight, RequestRate: s.RequestRate,
			OutputTokenRate: s.OutputTokensPerSecond, InputTokenRate: s.InputTokensPerSecond,
			OutputTokens: s.OutputTokens, InputTokens: s.InputTokens,
			TtftMs: quantilesProto(s.TTFTMs), ItlMs: quantilesProto(s.ITLMs),
		})
	}
	for i := range w.GPUs {
		g := &w.GPUs[i]
		gp := &llmtapv1.GPU{
			Index: int32(g.Index), Uuid: g.UUID, Name: g.Name,
			UtilizationPercent: g.UtilPercent, MemoryUtilizationPercent: g.MemUtilPercent,
			PowerWatts: g.PowerW, MemoryUsedBytes: g.MemUsedBytes, MemoryTotalBytes: g.MemTotalBytes,
			SmClockMhz: g.SMClockMHz, EnergyJoules: g.EnergyJ,
			Samples: int32(g.Samples), MemoryClockMhz: g.MemClockMHz, ThrottleReasons: g.ThrottleReasons,
		}
		if g.TempC != nil {
			t := float64(*g.TempC)
			gp.TemperatureCelsius = &t
		}
		p.Gpus = append(p.Gpus, gp)
	}
	for i := range w.Servers {
		sv := &w.Servers[i]
		sp := &llmtapv1.ServerModel{
			Kind: sv.Kind, Model: sv.Model, Target: sv.Target,
			KvCacheUsage: sv.KVCacheUsage, Running: sv.Running, Waiting: sv.Waiting,
			PromptTokensPerSecond: sv.PromptTokensPerSecond, GenerationTokensPerSecond: sv.GenerationTokensPerSecond,
			PrefixCacheHitRate: sv.PrefixCacheHitRate,
		}
		sp.TtftMs, sp.ItlMs = serverQuantiles(sv.TTFTMs), serverQuantiles(sv.ITLMs)
		sp.QueueMs, sp.PrefillMs, sp.DecodeMs = serverQuantiles(sv.QueueMs), serverQuantiles(sv.PrefillMs), serverQuantiles(sv.DecodeMs)
		if sv.Split != nil {
			sp.Split = &llmtapv1.SplitShares{Queue: sv.Split.Queue, Prefill: sv.Split.Prefill, Decode: sv.Split.Decode}
		}
		p.Servers = append(p.Servers, sp)
	}
	return p
}

// serverQuantiles is a server latency of the timeline in the Connect timeline's form; nil for
// nil.
func serverQuantiles(l *timeline.ServerLatency) *llmtapv1.Quantiles {
	if l == nil {
		return nil
	}
	mean := l.Mean
	return &llmtapv1.Quantiles{P50: l.P50, P99: l.P99, Count: int64(l.Count), Mean: &mean}
}

func quantilesProto(q *timeline.Quantiles) *llmtapv1.Quantiles {
	if q == nil {
		return nil
	}
	return &llmtapv1.Quantiles{P50: q.P50, P99: q.P99, Count: q.Count}
}
