package api

import (
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Host is the one port of the API: a process's measurement engine and what else it runs, as
// the JSON admin routes and the Connect service (Service) read and control them. The Caddy
// module's process (internal/process.Process) implements it, a benchmark serves a host with an
// engine only. A method that returns nil says the host has none of that part: the JSON routes
// then answer 404 (a zero document where the route always had one), the RPCs Unavailable or
// Unimplemented with the Options' reasons.
//
// A host that has only some parts embeds NoHost and overrides those.
type Host interface {
	// Tap returns the measurement engine, nil when none runs.
	Tap() *tap.Tap
	// RecorderDropped returns the records the recorders lost because their queues were full.
	RecorderDropped() uint64
	// Mirror returns the mirror's counters, gate, pairs summary and verdicts (the document of
	// GET /llmtap/mirror), nil when the host mirrors nothing.
	Mirror() *MirrorDoc
	// MirrorPairs returns the mirror's live/mirror pairs, oldest first.
	MirrorPairs() []mirror.Pair
	// Timeline returns the running timeline of fixed windows (GET /llmtap/timeline), nil
	// when none runs.
	Timeline() *timeline.Timeline
	// Windows returns where StreamTimeline's windows come from, nil for the engine's rolling
	// statistics (StatsTimeline).
	Windows() Timeline
	// ShadowLoads returns the shadow loads the JSON routes under ShadowRoute serve, nil when
	// the host has none to control.
	ShadowLoads() *RunnerShadow
	// Shadow returns the shadow load control of the RPCs, nil when the host has none.
	Shadow() Shadow
	// Recording returns the recording control, nil when the host has none.
	Recording() Recording
	// SLO returns the SLO tracker (GET /llmtap/slo, SLOStatus), nil when the host tracks no
	// SLOs.
	SLO() *slo.Tracker
}

// NoHost is a Host with none of the parts: every method returns nil. Embed it in a host that
// has some of them.
type NoHost struct{}

// Tap returns nil.
func (NoHost) Tap() *tap.Tap { return nil }

// RecorderDropped returns 0.
func (NoHost) RecorderDropped() uint64 { return 0 }

// Mirror returns nil.
func (NoHost) Mirror() *MirrorDoc { return nil }

// MirrorPairs returns nil.
func (NoHost) MirrorPairs() []mirror.Pair { return nil }

// Timeline returns nil.
func (NoHost) Timeline() *timeline.Timeline { return nil }

// Windows returns nil.
func (NoHost) Windows() Timeline { return nil }

// ShadowLoads returns nil.
func (NoHost) ShadowLoads() *RunnerShadow { return nil }

// Shadow returns nil.
func (NoHost) Shadow() Shadow { return nil }

// Recording returns nil.
func (NoHost) Recording() Recording { return nil }

// SLO returns nil.
func (NoHost) SLO() *slo.Tracker { return nil }

var _ Host = NoHost{}
