package timeline

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestRunnerKeepsReplacesAndWrites runs the hub's timeline on its goroutine: it publishes the
// timeline, writes final windows beside the recording folder, keeps the timeline when
// reconfigured with the same window, keep and settle, replaces it otherwise, and Close
// unpublishes it and leaves complete JSON lines.
func TestRunnerKeepsReplacesAndWrites(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	hub := NewHub()
	r := &Runner{Hub: hub, Dirs: func() map[string]recorder.Options {
		return map[string]recorder.Options{dir: {RotateBytes: 1 << 20, RotateAge: time.Hour}}
	}}
	opts := Options{Window: 10 * time.Millisecond, Settle: 10 * time.Millisecond, Keep: time.Second}
	r.Configure(opts)
	tl := hub.Timeline()
	if tl == nil {
		t.Fatal("Configure published no timeline")
	}
	files := func() []string {
		f, _ := filepath.Glob(filepath.Join(dir, FileKind+"-*.jsonl"))
		return f
	}
	waitFor(t, "a final window is written beside the recording", func() bool {
		f := files()
		if len(f) == 0 {
			return false
		}
		st, err := os.Stat(f[0])
		return err == nil && st.Size() > 0
	})
	r.Configure(opts)
	if hub.Timeline() != tl {
		t.Error("the same window, keep and settle replaced the timeline")
	}
	opts.Window = 20 * time.Millisecond
	r.Configure(opts)
	if got := hub.Timeline(); got == tl || got == nil || got.Window() != 20*time.Millisecond {
		t.Errorf("a new window kept the old timeline (%p, was %p)", got, tl)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hub.Timeline() != nil {
		t.Error("Close left the timeline published")
	}
	if err := r.Close(t.Context()); err != nil { // twice is fine
		t.Fatal(err)
	}
	for _, name := range files() {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for s := bufio.NewScanner(f); s.Scan(); {
			var w Window
			if err := json.Unmarshal(s.Bytes(), &w); err != nil {
				t.Errorf("%s: a line is not a window: %v", name, err)
			}
		}
		f.Close()
	}
}

// TestHub routes polls and records: the latest poll is kept until cleared, records get GPU
// figures only once a poll arrived, and everything reaches the published timeline.
func TestHub(t *testing.T) {
	h := NewHub()
	now := time.Now()
	r := &record.Record{Class: record.ClassLive, Model: "m", Status: 200, Start: now.Add(-time.Second), DurationMs: 1000}
	h.Enrich(r)
	h.Consume(r) // no timeline: dropped
	if r.GPU != nil {
		t.Error("a record was given GPU figures before any poll")
	}
	poll := []gpu.Sample{{Time: now, UUID: "GPU-0", PowerMW: 100_000, GPUUtil: 50, Valid: gpu.FieldPower | gpu.FieldUtil}}
	tl := New(Options{Window: time.Second})
	h.tl.Store(tl)
	h.OnGPU(poll, 1)
	if got := h.LatestGPU(nil); len(got) != 1 || got[0].UUID != "GPU-0" {
		t.Errorf("LatestGPU = %+v, want the poll", got)
	}
	h.ClearGPU()
	if got := h.LatestGPU(nil); len(got) != 0 {
		t.Errorf("LatestGPU after ClearGPU = %+v", got)
	}
	h.OnGPU([]gpu.Sample{{Time: now.Add(500 * time.Millisecond), UUID: "GPU-0", PowerMW: 100_000, GPUUtil: 50, Valid: gpu.FieldPower | gpu.FieldUtil}}, 1)
	r2 := *r
	r2.Start, r2.DurationMs = now.Add(-100*time.Millisecond), 700
	h.Enrich(&r2)
	if r2.GPU == nil {
		t.Error("a record over two polls got no GPU figures")
	}
	h.Consume(&r2)
	tl.Close(now.Add(5 * time.Second))
	var reqs, gpus int
	for _, w := range tl.Windows(Query{}) {
		gpus += len(w.GPUs)
		for _, s := range w.Series {
			reqs += int(s.Requests)
		}
	}
	if reqs == 0 || gpus == 0 {
		t.Errorf("the timeline saw %d requests and %d GPU windows; want both", reqs, gpus)
	}
}

// TestOptionsValidate: the defaults and sensible settings pass; negative, too short and
// keep-less-than-a-window settings fail with what is wrong.
func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // "" = valid
	}{
		{"defaults", Options{}, ""},
		{"the shortest window", Options{Window: MinWindow, Keep: time.Second}, ""},
		{"a keep with the default window", Options{Keep: time.Millisecond}, ""},
		{"negative", Options{Settle: -time.Second}, "must be positive"},
		{"a window too short to close on time", Options{Window: time.Millisecond}, "window 1ms is shorter than 10ms"},
		{"a keep of less than one window", Options{Window: time.Second, Keep: 500 * time.Millisecond}, "keep 500ms is shorter than one window (1s)"},
	}
	for _, tt := range tests {
		err := tt.o.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		} else if err == nil || err.Error() != tt.want && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
