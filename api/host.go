package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Implementations of Timeline and Shadow over llmtap's engines, for a host that runs them
// (the Caddy module): the host supplies only where its engines are.

// SourceTimeline names windows that come from a timeline of fixed windows
// (telemetry/timeline).
const SourceTimeline = "timeline"

// TimelineSource serves a running timeline (telemetry/timeline) to StreamTimeline.
type TimelineSource struct {
	// TL is the timeline.
	TL *timeline.Timeline
	// RecordsDropped returns the engine's count of dropped records, for each window (nil: 0).
	RecordsDropped func() uint64
}

// Period is the timeline's window.
func (s TimelineSource) Period() time.Duration { return s.TL.Window() }

// Windows returns the closed windows numbered after after (the newest only when after is 0).
func (s TimelineSource) Windows(after int64) []*llmtapv1.TimelineWindow {
	p := s.TL.Window()
	var q timeline.Query
	if after > 0 {
		q.Since = time.Unix(0, (after+1)*int64(p))
	} else {
		q.Since = time.Now().Add(-3 * p) // enough to hold the newest closed window
	}
	ws := s.TL.Windows(q)
	if after == 0 && len(ws) > 1 {
		ws = ws[len(ws)-1:]
	}
	var dropped uint64
	if s.RecordsDropped != nil {
		dropped = s.RecordsDropped()
	}
	out := make([]*llmtapv1.TimelineWindow, len(ws))
	for i := range ws {
		out[i] = timelineWindowProto(&ws[i], dropped)
	}
	return out
}

// RunnerShadow controls in-process shadow loads (load/shadow) as the admin routes
// /llmtap/shadow/… do: it starts, stops and sets the rate of the loads the host has, and
// changes no config.
type RunnerShadow struct {
	// Runner returns the load called name, or nil.
	Runner func(name string) *shadow.Runner
	// Runners returns every load.
	Runners func() []*shadow.Runner
	// State returns the document of GET /llmtap/shadow, for Status.
	State func() ShadowDoc
	// Logged is told each change made (name, and "started", "stopped", "rate set to N");
	// nil: none.
	Logged func(name, what string)
}

// runner finds the load called name, or the only one when name is empty.
func (c RunnerShadow) runner(name string) (*shadow.Runner, error) {
	if name != "" {
		if r := c.Runner(name); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("%w: no shadow load named %q is loaded", ErrNotFound, name)
	}
	rs := c.Runners()
	switch len(rs) {
	case 0:
		return nil, fmt.Errorf("%w: the loaded config has no shadow load (llmtap { shadow <name> { … } })", ErrNotFound)
	case 1:
		return rs[0], nil
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name()
	}
	return nil, fmt.Errorf("%w: name the shadow load, one of %q", ErrInvalid, names)
}

// do finds the load, applies f and returns its state after.
func (c RunnerShadow) do(name string, f func(*shadow.Runner) (string, error)) (*llmtapv1.ShadowLoad, error) {
	r, err := c.runner(name)
	if err != nil {
		return nil, err
	}
	what, err := f(r)
	if err != nil {
		return nil, err
	}
	if c.Logged != nil {
		c.Logged(r.Name(), what)
	}
	return ShadowLoadProto(r.Status()), nil
}

// Start starts (or restarts) a load.
func (c RunnerShadow) Start(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	return c.do(name, func(r *shadow.Runner) (string, error) {
		if err := r.Start(); err != nil {
			return "", fmt.Errorf("%w: starting shadow load %q: %v", ErrState, r.Name(), err)
		}
		return "started", nil
	})
}

// Stop stops a load; its requests in flight finish.
func (c RunnerShadow) Stop(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	return c.do(name, func(r *shadow.Runner) (string, error) {
		r.Stop()
		return "stopped", nil
	})
}

// SetRate sets a load's rate.
func (c RunnerShadow) SetRate(_ context.Context, name string, rate float64) (*llmtapv1.ShadowLoad, error) {
	return c.do(name, func(r *shadow.Runner) (string, error) {
		if err := r.SetRate(rate); err != nil {
			kind := ErrInvalid
			if errors.Is(err, shadow.ErrTraceRate) {
				kind = ErrState
			}
			return "", fmt.Errorf("%w: shadow load %q: %v", kind, r.Name(), err)
		}
		return fmt.Sprintf("rate set to %v", rate), nil
	})
}

// Status returns every load and the guard rails.
func (c RunnerShadow) Status(context.Context) (*llmtapv1.ShadowState, error) {
	return ShadowStateProto(c.State()), nil
}

// Interface guards.
var (
	_ Timeline = TimelineSource{}
	_ Shadow   = RunnerShadow{}
)
