package llmtap

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// SourceTimeline names windows that come from the app's timeline.
const SourceTimeline = "timeline"

// activeTimelineSource returns the app's running timeline as the API's window source, or nil
// when none runs (the API then computes windows from the engine's statistics).
func activeTimelineSource() api.Timeline {
	if tl := ActiveTimeline(); tl != nil {
		return timelineSource{tl}
	}
	return nil
}

// timelineSource serves the app's timeline (telemetry/timeline) to StreamTimeline.
type timelineSource struct{ tl *timeline.Timeline }

func (s timelineSource) Period() time.Duration { return s.tl.Window() }

// Windows returns the closed windows numbered after after (the newest only when after is 0).
func (s timelineSource) Windows(after int64) []*llmtapv1.TimelineWindow {
	p := s.tl.Window()
	var q timeline.Query
	if after > 0 {
		q.Since = time.Unix(0, (after+1)*int64(p))
	} else {
		q.Since = time.Now().Add(-3 * p) // enough to hold the newest closed window
	}
	ws := s.tl.Windows(q)
	if after == 0 && len(ws) > 1 {
		ws = ws[len(ws)-1:]
	}
	out := make([]*llmtapv1.TimelineWindow, len(ws))
	for i := range ws {
		out[i] = windowProto(&ws[i])
	}
	return out
}

// windowProto converts one timeline window.
func windowProto(w *timeline.Window) *llmtapv1.TimelineWindow {
	d := durationpb.New(time.Duration(w.DurationMs * float64(time.Millisecond)))
	p := &llmtapv1.TimelineWindow{
		Seq: w.Seq, Start: timestamppb.New(w.Start), Duration: d, Span: d,
		Source: SourceTimeline, Final: w.Final, RecordsDropped: RecordsDropped(),
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
		sp.QueueMs, sp.PrefillMs, sp.DecodeMs = serverQuantiles(sv.QueueMs), serverQuantiles(sv.PrefillMs), serverQuantiles(sv.DecodeMs) // timesplit.go
		p.Servers = append(p.Servers, sp)
	}
	return p
}

func quantilesProto(q *timeline.Quantiles) *llmtapv1.Quantiles {
	if q == nil {
		return nil
	}
	return &llmtapv1.Quantiles{P50: q.P50, P99: q.P99, Count: q.Count}
}

// RecordsDropped is the number of records the running engine's pipeline dropped (0 when none
// runs).
func RecordsDropped() uint64 {
	if t := activeTap(); t != nil {
		return t.Dropped()
	}
	return 0
}

var _ api.Timeline = timelineSource{}
