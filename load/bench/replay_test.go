package bench

import (
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/load/workload"
)

// TestReplayApplySchedulesHeadsAndChainsTurns: a session's later turn is not on the schedule
// but follows its previous turn after its delay, both divided by the speedup; the grace period
// starts when the last scheduled request is due; a payload is sent verbatim on its own path.
func TestReplayApplySchedulesHeadsAndChainsTurns(t *testing.T) {
	t.Parallel()
	reqs := []trace.Request{
		{Timestamp: 0, InputLength: 20, OutputLength: 2},
		{Timestamp: 100 * time.Millisecond, InputLength: 30, OutputLength: 2, SessionID: "s"},
		{Timestamp: 200 * time.Millisecond, Payload: []byte(`{"model":"x"}`), Path: "/v1/completions"},
		{Timestamp: 300 * time.Millisecond, InputLength: 40, OutputLength: 2, SessionID: "s", Delay: 50 * time.Millisecond},
	}
	var spec Spec
	rp := Replay{Requests: reqs, Path: "/v1/chat/completions", Speedup: 2,
		Body: workload.BodySpec{Endpoint: workload.EndpointChat, Model: "m", Stream: true}}
	if _, err := rp.Apply(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.Total != 4 || spec.GraceFrom != 100*time.Millisecond {
		t.Errorf("total %d, grace from %v: want 4 requests, 100 ms (the last head at 200 ms, twice as fast)", spec.Total, spec.GraceFrom)
	}
	heads := []int{spec.MapN(0), spec.MapN(1), spec.MapN(2)}
	if heads[0] != 0 || heads[1] != 1 || heads[2] != 2 {
		t.Errorf("scheduled %v, want trace requests 0, 1, 2", heads)
	}
	if nx, d, ok := spec.Next(1); !ok || nx != 3 || d != 25*time.Millisecond {
		t.Errorf("after request 1: %d after %v (%v), want request 3 after 25 ms", nx, d, ok)
	}
	if _, _, ok := spec.Next(0); ok {
		t.Error("request 0 has no session: want no next turn")
	}
	p, err := spec.Build(2)
	if err != nil || string(p.Body) != `{"model":"x"}` || p.Path != "/v1/completions" || *p.SessionNum != 2 {
		t.Errorf("payload request: %+v, %v", p, err)
	}
	s, err := spec.Build(3)
	if err != nil || p.Path == s.Path || *s.SessionNum != 1 || s.Session != "s" || len(s.Body) == 0 {
		t.Errorf("synthetic turn: %+v, %v: want the default path, session s numbered 1", s, err)
	}
}
