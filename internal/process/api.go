package process

import (
	"context"
	"fmt"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/recorder"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
	"go.uber.org/zap"
)

// The ports of package api (the admin routes' api.Admin, the Connect service's api.Options)
// over a Process. A host serves the Process running at the time of each call, nil when none
// runs: the routes then answer as with no measurement engine.

// Admin is the JSON admin routes over p (nil: none runs).
func (p *Process) Admin() api.Admin {
	if p == nil {
		return api.Admin{Tap: func() *tap.Tap { return nil }, Mirror: func() api.MirrorDoc { return api.MirrorDoc{} },
			MirrorPairs: func() []mirror.Pair { return nil }, Timeline: func() *timeline.Timeline { return nil },
			Shadow: p.shadowControl()}
	}
	return api.Admin{Tap: p.Tap, RecorderDropped: p.RecorderDropped, Mirror: p.MirrorDoc, MirrorPairs: p.Mirror.Pairs.Pairs,
		Timeline: p.Hub.Timeline, Shadow: p.shadowControl(), SLO: p.SLO}
}

// MirrorDoc is the document of GET /llmtap/mirror.
func (p *Process) MirrorDoc() api.MirrorDoc {
	m := p.Mirror
	return api.MirrorDoc{Counters: m.Stats.Snapshot(), Gate: m.Gate.State(), Pairs: m.Pairs.Summary(), Verdicts: m.Pairs.Verdicts()}
}

// shadowControl controls the shadow loads of p (nil: none), for the admin routes and the
// Connect service alike, logging each control.
func (p *Process) shadowControl() api.RunnerShadow {
	c := api.RunnerShadow{Runner: func(string) *inproc.Runner { return nil }, Runners: func() []*inproc.Runner { return nil },
		State: func() api.ShadowDoc {
			return api.ShadowDoc{Shadows: []inproc.Status{}, HardMaxRate: inproc.HardMaxRate, HardMaxInFlight: inproc.HardMaxInFlight}
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

// ShadowDoc is the document of GET /llmtap/shadow.
func (p *Process) ShadowDoc() api.ShadowDoc {
	doc := api.ShadowDoc{Shadows: []inproc.Status{}, Guard: p.GuardState(), ForgedMarkers: p.marks.forged.Load(),
		ExpiredMarkers: p.marks.expired.Load(), ReplayedMarkers: p.marks.replayed.Load(),
		HardMaxRate: inproc.HardMaxRate, HardMaxInFlight: inproc.HardMaxInFlight, PassiveHeadroom: p.Passive.Estimates()}
	for _, r := range p.ShadowRunners() {
		doc.Shadows = append(doc.Shadows, r.Status())
	}
	return doc
}

// ServiceOptions are the Connect service's ports over the Process current returns at each call
// (nil when none runs): its engine, recorders, mirror, SLOs, shadow loads and, when it runs one, its timeline (without it, windows come from the engine's
// rolling statistics). plan makes the options of a recording started through the API.
func ServiceOptions(current func() *Process, plan func(*llmtapv1.RecordingStartRequest) (recorder.Options, error)) api.Options {
	return api.Options{
		StreamRefused: func() {
			if p := current(); p != nil {
				p.metrics.streamsRefused.Inc()
			}
		},
		Tap: func() *tap.Tap { return current().Admin().Tap() },
		RecorderDropped: func() uint64 {
			if p := current(); p != nil {
				return p.RecorderDropped()
			}
			return 0
		},
		Recording: Recording{Current: current, Plan: plan},
		Timeline: func() api.Timeline {
			if p := current(); p != nil {
				if tl := p.Hub.Timeline(); tl != nil {
					return api.TimelineSource{TL: tl, RecordsDropped: p.RecordsDropped}
				}
			}
			return nil
		},
		Shadow: func() api.Shadow { return current().shadowControl() },
		Mirror: func() api.MirrorDoc { return current().Admin().Mirror() },
		SLO:    func() *slo.Tracker { return current().Admin().SLO },
	}
}

// Recording implements api.Recording on the recorders of the Process Current returns: the
// runtime recording, with options made by Plan from the request (the options of a record
// block), and the status of every recorder.
type Recording struct {
	Current func() *Process
	Plan    func(*llmtapv1.RecordingStartRequest) (recorder.Options, error)
}

func (rr Recording) process() (*Process, error) {
	if p := rr.Current(); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: no loaded config uses llmtap", api.ErrState)
}

var _ api.Recording = Recording{}

// Start starts the runtime recording in req.Dir.
func (rr Recording) Start(_ context.Context, req *llmtapv1.RecordingStartRequest) (*llmtapv1.Recording, error) {
	p, err := rr.process()
	if err != nil {
		return nil, err
	}
	return p.startRecording(req, rr.Plan)
}

// Stop stops the runtime recording: records of requests that ended before the call are
// delivered, the queue is written, the files synced and closed.
func (rr Recording) Stop(ctx context.Context) (*llmtapv1.Recording, error) {
	p, err := rr.process()
	if err != nil {
		return nil, err
	}
	return p.stopRecording(ctx)
}

// Status lists the runtime recording, then the configured recorders by folder.
func (rr Recording) Status(context.Context) ([]*llmtapv1.Recording, error) {
	if p := rr.Current(); p != nil {
		return p.recordingStatus(), nil
	}
	return nil, nil
}
