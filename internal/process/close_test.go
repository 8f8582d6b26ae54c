package process

import (
	"testing"
	"time"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// TestCloseClosesRecorders: closing the Process drains the record pipeline into the recorders
// still open — one a config holds, and the recording started through the API — and then
// closes them, so the record submitted just before is written and their files are shut; the
// holders letting go afterwards change nothing (a recorder's drops are not counted twice).
func TestCloseClosesRecorders(t *testing.T) {
	t.Parallel()
	plan := func(req *llmtapv1.RecordingStartRequest) (recorder.Options, error) {
		return recorder.Options{Dir: req.GetDir(), Records: true}, nil
	}
	p := New(Options{PlanRecording: plan})
	held, err := p.HoldRecorder(recorder.Options{Dir: t.TempDir(), Records: true})
	if err != nil {
		t.Fatal(err)
	}
	// A recorder whose QueueBytes of 1 sheds its record's payload line: closing it counts that
	// (queue_bytes) in the process's drops, which a second close would count again.
	shedding, err := p.HoldRecorder(recorder.Options{Dir: t.TempDir(), Records: true, Payloads: true, QueueBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Tap().Submit(pipeline.Routed{Record: &record.Record{RequestID: "r2", Class: record.ClassLive, Model: "m",
		Status: 200, Start: time.Now(), RequestBody: []byte(`{"model":"m"}`)}, Route: &pipeline.Route{Recorder: shedding.Key}})
	p.Tap().Flush() // before the runtime recording starts, which would take it too
	if _, err := p.startRecording(&llmtapv1.RecordingStartRequest{Dir: t.TempDir()}, plan); err != nil {
		t.Fatal(err)
	}
	runtime := p.rec.runtime.Load().rec
	p.Tap().Submit(pipeline.Routed{Record: &record.Record{RequestID: "r1", Class: record.ClassLive, Model: "m",
		Status: 200, Start: time.Now()}, Route: &pipeline.Route{Recorder: held.Key}})
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*recorder.Recorder{"the held recorder": held.rec, "the runtime recording": runtime} {
		if st := r.Stats(); st.Written != 1 || r.Files() != nil {
			t.Errorf("%s after Close: %d written, files %v open; want 1 written and none open", name, st.Written, r.Files())
		}
	}
	if held.Running() || p.rec.runtime.Load() != nil {
		t.Error("a recorder closed by the pipeline still takes records")
	}
	want := [NumDropReasons]uint64{DropQueueBytes: 1}
	if n := p.RecorderDrops(); n != want {
		t.Errorf("drops %v after Close; want %v (the shed payload line)", n, want)
	}
	held.Release()
	shedding.Release()
	if n := p.RecorderDrops(); n != want {
		t.Errorf("drops %v after letting go of closed recorders; want %v, unchanged", n, want)
	}
}
