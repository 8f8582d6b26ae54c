package llmtap

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// TestDrainIsBoundedAndCounted unloads a recording handler's app while one of its streams
// runs past the drain time: the app lets go of the handler's recorder and the Process when the
// time is up, and the stream's record, which has no recorder left, is counted dropped with
// reason drain_timeout rather than lost silently. A stream that ends within the drain time
// keeps its record (TestReloadKeepsInFlightRecords).
func TestDrainIsBoundedAndCounted(t *testing.T) {
	p, err := acquireProcess()
	if err != nil {
		t.Fatal(err)
	}
	defer releaseProcess()                      // the test's own hold, so the app's release does not stop it
	if _, err := acquireProcess(); err != nil { // the app's hold
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	entry, err := p.HoldRecorder(recorder.Options{Dir: dir, Records: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{proc: p, tap: p.Tap(), meters: meter.NewPool(meter.Options{}), streams: new(process.Streams),
		recording: &recording{entry: entry}, route: &pipeline.Route{Recorder: entry.Key}}
	a := &App{proc: p, handlers: []*Handler{h}}

	h.streams.Begin() // as ServeHTTP does
	m := h.tap.BeginWith(h.meters, time.Now(), "/v1/chat/completions")
	rec := m.Record()
	rec.RequestID = "outlives-its-config"
	h.recording.tag(httptest.NewRequest("POST", "/v1/chat/completions", nil), rec)

	before := p.RecorderDrops()
	a.drainWithin(20 * time.Millisecond) // the stream is still running: gives up
	if !h.streams.Abandoned() {
		t.Fatal("the drain returned with a stream running but did not mark it abandoned")
	}
	if entry.Running() {
		t.Fatal("the recorder still runs after its only holder let go")
	}

	h.endFor(nil, nil, m, nil, "", "") // the stream ends after the drain time
	h.tap.Flush()
	after := p.RecorderDrops()
	if d := after[process.DropDrainTimeout] - before[process.DropDrainTimeout]; d != 1 {
		t.Errorf("drain_timeout drops went up by %d, want 1", d)
	}
	for _, r := range []process.DropReason{process.DropQueueFull, process.DropWriteFailed, process.DropClosed} {
		if after[r] != before[r] {
			t.Errorf("%s drops went from %d to %d: the late record is counted once, as drain_timeout", r, before[r], after[r])
		}
	}
	if n := h.streams.Active(); n != 0 {
		t.Errorf("%d streams still counted active", n)
	}
}
