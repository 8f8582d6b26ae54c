package api

import (
	"cmp"
	"slices"

	"github.com/llmtap/llmtap/load/guard"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// The documents of the JSON admin routes (/llmtap/…, served by the Caddy module on the admin
// listener); each says what it holds in full, as the route's page documents it.

// SummaryDoc is the document GET /llmtap/summary returns.
type SummaryDoc struct {
	// InFlight is the number of requests being measured when the summary was taken.
	InFlight int64 `json:"in_flight"`
	// RecordsDropped counts records lost because the record pipeline's queue was full: the
	// requests passed, but their measurements are missing from the summary.
	RecordsDropped uint64 `json:"records_dropped"`
	// RecorderDropped counts measured requests the recorder could not write to its files
	// because its queue was full: they are in the summary but missing from the recording.
	RecorderDropped uint64 `json:"recorder_dropped"`
	// Summary holds the per-group statistics in AIPerf's layout.
	Summary stats.Summary `json:"summary"`
}

// NewSummaryDoc reads the summary of t; recorderDropped is what the recorders lost.
func NewSummaryDoc(t *tap.Tap, recorderDropped uint64) SummaryDoc {
	return SummaryDoc{InFlight: t.InFlight(), RecordsDropped: t.Dropped(), RecorderDropped: recorderDropped, Summary: t.Stats().Summary()}
}

// ShadowDoc is the document GET /llmtap/shadow returns.
type ShadowDoc struct {
	// Shadows are the loads, by name.
	Shadows []shadow.Status `json:"shadows"`
	// Guard is the guard rails' state; absent when no loaded config has shadow load or a
	// guard block.
	Guard *guard.State `json:"guard,omitempty"`
	// ForgedMarkers counts requests that carried the Llmtap-Shadow header with a value this
	// process did not sign (measured as live).
	ForgedMarkers uint64 `json:"forged_markers"`
	// ExpiredMarkers and ReplayedMarkers count requests that carried a genuine mark past its
	// expiry (or of a load this process no longer has), or one already used; they were
	// measured as live traffic.
	ExpiredMarkers  uint64 `json:"expired_markers"`
	ReplayedMarkers uint64 `json:"replayed_markers"`
	// HardMaxRate and HardMaxInFlight are the ceilings no config or admin call can exceed.
	HardMaxRate     int `json:"hard_max_rate"`
	HardMaxInFlight int `json:"hard_max_in_flight"`
	// PassiveHeadroom is the capacity left on each upstream estimated from live traffic alone
	// (the handlers' passive_headroom), beside the headroom probes among Shadows; empty when
	// no handler estimates it.
	PassiveHeadroom []headroom.Estimate `json:"passive_headroom"`
}

// MirrorDoc is the document GET /llmtap/mirror returns.
type MirrorDoc struct {
	// Counters are what happened to sampled requests since the process started.
	Counters mirror.Counters `json:"counters"`
	// Gate is the guard rails' pause switch.
	Gate mirror.GateState `json:"gate"`
	// Pairs compares live and mirror over the same requests, per model.
	Pairs mirror.Summary `json:"pairs"`
	// Verdicts are the canary verdicts, per model.
	Verdicts []mirror.ModelVerdict `json:"verdicts"`
}

// TimelineDoc is the document GET /llmtap/timeline returns.
type TimelineDoc struct {
	// WindowMs is the window length in milliseconds.
	WindowMs float64 `json:"window_ms"`
	// Dropped counts records, GPU samples and scrapes that fell outside the kept windows.
	Dropped uint64 `json:"dropped"`
	// Windows are the closed windows asked for, oldest first.
	Windows []timeline.Window `json:"windows"`
}

// NewTimelineDoc reads the windows of tl that q selects.
func NewTimelineDoc(tl *timeline.Timeline, q timeline.Query) TimelineDoc {
	d := TimelineDoc{WindowMs: float64(tl.Window()) / 1e6, Dropped: tl.Dropped(), Windows: tl.Windows(q)}
	if d.Windows == nil {
		d.Windows = []timeline.Window{}
	}
	return d
}

// Slowest returns the k slowest of recs, slowest first, for the dashboard's table: by request
// latency, or by duration where there is none (a failed or non-streaming request). It sorts a
// copy; recs stays as it was.
func Slowest(recs []*record.Record, k int) []*record.Record {
	key := func(r *record.Record) float64 {
		if r.RequestLatencyMs != nil {
			return *r.RequestLatencyMs
		}
		return r.DurationMs
	}
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b *record.Record) int { return cmp.Compare(key(b), key(a)) })
	return out[:min(k, len(out))]
}
