package llmtap

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/shadow/guard"
	"github.com/llmtap/llmtap/shadow/inproc"
)

// shadowControl implements api.Shadow on the process's shadow loads, as the admin routes
// /llmtap/shadow/… do (shadow_admin.go): it starts, stops and sets the rate of the loads the
// loaded config names, and changes no config.
type shadowControl struct{}

// runner finds the load called name, or the only one when name is empty.
func (shadowControl) runner(name string) (*inproc.Runner, error) {
	if name != "" {
		if r := shadowRunner(name); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("%w: no shadow load named %q is loaded", api.ErrNotFound, name)
	}
	rs := shadowRunners()
	switch len(rs) {
	case 0:
		return nil, fmt.Errorf("%w: the loaded config has no shadow load (llmtap { shadow <name> { … } })", api.ErrNotFound)
	case 1:
		return rs[0], nil
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name()
	}
	return nil, fmt.Errorf("%w: name the shadow load, one of %q", api.ErrInvalid, names)
}

func (c shadowControl) Start(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	r, err := c.runner(name)
	if err != nil {
		return nil, err
	}
	if err := r.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting shadow load %q: %v", api.ErrState, r.Name(), err)
	}
	logShadowControl(r.Name(), "started")
	return shadowLoadProto(r.Status()), nil
}

func (c shadowControl) Stop(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	r, err := c.runner(name)
	if err != nil {
		return nil, err
	}
	r.Stop()
	logShadowControl(r.Name(), "stopped")
	return shadowLoadProto(r.Status()), nil
}

func (c shadowControl) SetRate(_ context.Context, name string, rate float64) (*llmtapv1.ShadowLoad, error) {
	r, err := c.runner(name)
	if err != nil {
		return nil, err
	}
	if err := r.SetRate(rate); err != nil {
		kind := api.ErrInvalid
		if errors.Is(err, inproc.ErrTraceRate) {
			kind = api.ErrState
		}
		return nil, fmt.Errorf("%w: shadow load %q: %v", kind, r.Name(), err)
	}
	logShadowControl(r.Name(), fmt.Sprintf("rate set to %v", rate))
	return shadowLoadProto(r.Status()), nil
}

func (shadowControl) Status(context.Context) (*llmtapv1.ShadowState, error) {
	doc := shadowStatus()
	st := &llmtapv1.ShadowState{
		Guard: guardProto(doc.Guard), ForgedMarkers: doc.ForgedMarkers,
		HardMaxRate: float64(doc.HardMaxRate), HardMaxInFlight: int32(doc.HardMaxInFlight),
	}
	for _, s := range doc.Shadows {
		st.Loads = append(st.Loads, shadowLoadProto(s))
	}
	return st, nil
}

func shadowLoadProto(s inproc.Status) *llmtapv1.ShadowLoad {
	return &llmtapv1.ShadowLoad{
		Name: s.Name, Mode: s.Mode, State: s.State, PauseReason: s.PauseReason,
		Rate: s.Rate, ConfigRate: s.ConfigRate, MaxRate: s.MaxRate, AchievedRate: s.AchievedRate,
		InFlight: s.InFlight, MaxInFlight: int32(s.MaxInFlight),
		Sent: s.Sent, Ok: s.OK, Errors: s.Errors, Dropped: s.Dropped, Pauses: s.Pauses, Resumes: s.Resumes,
		LagP50Ms: s.LagP50Ms, LagP99Ms: s.LagP99Ms, LagMaxMs: s.LagMaxMs,
	}
}

func guardProto(g *guard.State) *llmtapv1.ShadowGuard {
	if g == nil {
		return nil
	}
	p := &llmtapv1.ShadowGuard{
		Tripped: g.Tripped, Reason: g.Reason, Trips: g.Trips, Clears: g.Clears, TripsByReason: g.TripsByReason,
		LiveRequests: g.LiveRequests, LiveTtftP99Ms: g.LiveTTFTP99Ms, LiveErrorRate: g.LiveErrorRate,
	}
	if !g.Since.IsZero() {
		p.Since = timestamppb.New(g.Since)
	}
	if !g.ClearsAt.IsZero() {
		p.ClearsAt = timestamppb.New(g.ClearsAt)
	}
	return p
}

var _ api.Shadow = shadowControl{}
