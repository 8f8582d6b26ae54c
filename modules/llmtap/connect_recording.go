package llmtap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// The runtime recording is the one started through the API (RecordingStart): a recorder that
// receives every request the engine measures, from every handler, until RecordingStop. It is
// separate from the recorders of the configuration, which record what their handlers route
// to them, and like them it writes off the request path through a bounded queue that counts
// what it drops. It is proc.runtimeRec (lifetimes.go).

type runtimeEntry struct {
	rec     *recorder.Recorder
	started time.Time
}

// submitRuntime hands a finalized record to the runtime recording, if one runs.
func submitRuntime(r *record.Record) {
	if e := proc.runtimeRec.Load(); e != nil && !e.rec.Submit(r) {
		countDrop(dropQueueFull)
	}
}

// runtimeRecording implements api.Recording on the process's recorders.
type runtimeRecording struct{}

// Start starts the runtime recording in req.Dir with the options of a record block.
func (runtimeRecording) Start(_ context.Context, req *llmtapv1.RecordingStartRequest) (*llmtapv1.Recording, error) {
	cfg := RecordConfig{
		Dir: req.GetDir(), Files: req.GetFiles(), Sample: req.GetSample(), Models: req.GetModels(),
		Routes: req.GetRoutes(), RedactText: req.GetRedactText(), RedactFields: req.GetRedactFields(),
	}
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: dir is required: the folder to write the recording to", api.ErrInvalid)
	}
	if s := cfg.Sample; s < 0 || s > 1 {
		return nil, fmt.Errorf("%w: sample %v: want a fraction in (0, 1], 0 meaning 1", api.ErrInvalid, s)
	}
	opts, err := cfg.options()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrInvalid, err)
	}
	proc.runtimeMu.Lock()
	defer proc.runtimeMu.Unlock()
	if e := proc.runtimeRec.Load(); e != nil {
		return nil, fmt.Errorf("%w: a recording started through the API is already writing to %s; stop it first", api.ErrState, e.rec.Options().Dir)
	}
	if _, configured := recordingDirs()[opts.Dir]; configured {
		return nil, fmt.Errorf("%w: the loaded config already records to %s; choose another folder", api.ErrState, opts.Dir)
	}
	rec, err := recorder.New(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: starting the recorder in %s: %v", api.ErrInvalid, opts.Dir, err)
	}
	e := &runtimeEntry{rec: rec, started: time.Now()}
	proc.runtimeRec.Store(e)
	return api.RecordingProto(rec, "runtime", e.started), nil
}

// stopTimeout bounds how long Stop waits for the recorder to write its queue.
const stopTimeout = 10 * time.Second

// Stop stops the runtime recording: records of requests that ended before the call are
// delivered, the queue is written, the files synced and closed.
func (runtimeRecording) Stop(ctx context.Context) (*llmtapv1.Recording, error) {
	proc.runtimeMu.Lock()
	defer proc.runtimeMu.Unlock()
	e := proc.runtimeRec.Swap(nil)
	if e == nil {
		return nil, fmt.Errorf("%w: no recording started through the API is running", api.ErrState)
	}
	if t := activeTap(); t != nil {
		t.Flush() // records already in the pipeline reach the recorder before it closes
	}
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	_ = e.rec.Flush(ctx)
	p := api.RecordingProto(e.rec, "runtime", e.started)
	if err := e.rec.Close(ctx); err != nil {
		return nil, fmt.Errorf("closing the recording in %s: %w", p.Dir, err)
	}
	st := e.rec.Stats()
	proc.recDropped[dropWriteFailed].Add(st.Failed)
	proc.recDropped[dropQueueBytes].Add(st.Shed)
	p.Written, p.Dropped, p.Filtered, p.Errors = st.Written, st.Dropped+st.Failed+st.Shed, st.Filtered, st.Errors
	return p, nil
}

// Status lists the runtime recording, then the configured recorders by folder.
func (runtimeRecording) Status(context.Context) ([]*llmtapv1.Recording, error) {
	var out []*llmtapv1.Recording
	if e := proc.runtimeRec.Load(); e != nil {
		out = append(out, api.RecordingProto(e.rec, "runtime", e.started))
	}
	proc.recMu.RLock()
	recs := make([]*recorder.Recorder, 0, len(proc.recorders))
	for _, e := range proc.recorders {
		recs = append(recs, e.rec)
	}
	proc.recMu.RUnlock()
	slices.SortFunc(recs, func(a, b *recorder.Recorder) int { return strings.Compare(a.Options().Dir, b.Options().Dir) })
	for _, r := range recs {
		out = append(out, api.RecordingProto(r, "config", time.Time{}))
	}
	return out, nil
}

var _ api.Recording = runtimeRecording{}
