package api

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
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
	}
}
