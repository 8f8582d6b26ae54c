package process

import (
	"context"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/timeline"
	"go.uber.org/zap"
)

// The Process is the Host of package api (its one port): the JSON admin routes and the
// Connect service serve the Process running at the time of each call. Its methods as a Host
// take a nil Process, which runs nothing: the routes then answer as with no measurement
// engine.

var _ api.Host = (*Process)(nil)

// RecorderDropped returns the records the recorders lost because their queues were full.
func (p *Process) RecorderDropped() uint64 {
	if p == nil {
		return 0
	}
	return p.recorderDropped()
}

// Mirror is the document of GET /llmtap/mirror (zero for a nil Process).
func (p *Process) Mirror() *api.MirrorDoc {
	if p == nil {
		return &api.MirrorDoc{}
	}
	m := p.Mirroring
	return &api.MirrorDoc{Counters: m.Stats.Snapshot(), Gate: m.Gate.State(), Pairs: m.Pairs.Summary(), Verdicts: m.Pairs.Verdicts()}
}

// MirrorPairs returns the mirror's pairs, oldest first.
func (p *Process) MirrorPairs() []mirror.Pair {
	if p == nil {
		return nil
	}
	return p.Mirroring.Pairs.Pairs()
}

// Timeline returns the running timeline, nil when none runs.
func (p *Process) Timeline() *timeline.Timeline {
	if p == nil {
		return nil
	}
	return p.Hub.Timeline()
}

// Windows serves the running timeline's windows to StreamTimeline, nil when none runs (the
// service then makes windows from the engine's rolling statistics).
func (p *Process) Windows() api.Timeline {
	if tl := p.Timeline(); tl != nil {
		return api.TimelineSource{TL: tl, RecordsDropped: p.RecordsDropped}
	}
	return nil
}

// ShadowLoads controls the shadow loads of p (none for a nil Process) for the admin routes,
// logging each control.
func (p *Process) ShadowLoads() *api.RunnerShadow {
	c := &api.RunnerShadow{Runner: func(string) *shadow.Runner { return nil }, Runners: func() []*shadow.Runner { return nil },
		State: func() api.ShadowDoc {
			return api.ShadowDoc{Shadows: []shadow.Status{}, HardMaxRate: shadow.HardMaxRate, HardMaxInFlight: shadow.HardMaxInFlight}
		},
	}
	if p != nil {
		c.Runner, c.Runners, c.State = p.ShadowRunner, p.ShadowRunners, p.ShadowDoc
		c.Logged = func(name, what string) {
			p.Log("shadow").Info("shadow load "+what+" through the admin API", zap.String("shadow", name))
		}
	}
	return c
}

// Shadow controls the shadow loads of p for the RPCs, as ShadowLoads does for the routes.
func (p *Process) Shadow() api.Shadow { return p.ShadowLoads() }

// Recording controls the recorders of p (none for a nil Process); a recording started
// through the API takes the options Options.PlanRecording makes of the request.
func (p *Process) Recording() api.Recording {
	if p == nil || p.opts.PlanRecording == nil {
		return nil
	}
	return recording{p}
}

// SLO returns the SLO tracker, nil for a nil Process.
func (p *Process) SLO() *slo.Tracker {
	if p == nil {
		return nil
	}
	return p.SLOTracker
}

// StreamRefused counts a timeline stream refused for the service's MaxStreams.
func (p *Process) StreamRefused() {
	if p != nil {
		p.metrics.StreamsRefused.Inc()
	}
}

// ShadowDoc is the document of GET /llmtap/shadow.
func (p *Process) ShadowDoc() api.ShadowDoc {
	doc := api.ShadowDoc{Shadows: []shadow.Status{}, Guard: p.GuardState(), ForgedMarkers: p.marks.forged.Load(),
		ExpiredMarkers: p.marks.expired.Load(), ReplayedMarkers: p.marks.replayed.Load(),
		HardMaxRate: shadow.HardMaxRate, HardMaxInFlight: shadow.HardMaxInFlight, PassiveHeadroom: p.Passive.Estimates()}
	for _, r := range p.ShadowRunners() {
		doc.Shadows = append(doc.Shadows, r.Status())
	}
	return doc
}

// recording implements api.Recording on the recorders of a Process: the runtime recording,
// with options made by Options.PlanRecording from the request (the options of a record
// block), and the status of every recorder.
type recording struct{ p *Process }

// Start starts the runtime recording in req.Dir.
func (rr recording) Start(_ context.Context, req *llmtapv1.RecordingStartRequest) (*llmtapv1.Recording, error) {
	return rr.p.startRecording(req, rr.p.opts.PlanRecording)
}

// Stop stops the runtime recording: records of requests that ended before the call are
// delivered, the queue is written, the files synced and closed.
func (rr recording) Stop(ctx context.Context) (*llmtapv1.Recording, error) {
	return rr.p.stopRecording(ctx)
}

// Status lists the runtime recording, then the configured recorders by folder.
func (rr recording) Status(context.Context) ([]*llmtapv1.Recording, error) {
	return rr.p.recordingStatus(), nil
}
