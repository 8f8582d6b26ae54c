package timeline

import (
	"context"
	"sync"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// Runner runs a hub's timeline: the goroutine that closes its windows (Timeline.Run) and the
// files its final windows are written to, timeline-<start>.jsonl beside every recording
// (recorder.Beside, rotated as each recording's recorder rotates). Configure keeps the running
// timeline, and its history, while the window, keep and settle stay the same, and replaces it
// by a new, empty one otherwise; Close stops it. Its methods are safe for concurrent use.
type Runner struct {
	// Hub is where the running timeline is published. Required.
	Hub *Hub
	// Dirs returns the folders recorded to now, with their recorders' options; nil writes no
	// file.
	Dirs func() map[string]recorder.Options
	// OnFileError, when set, is told the first failure to write each folder's file.
	OnFileError func(dir string, err error)

	mu  sync.Mutex // held while (re)configuring
	key [3]time.Duration
	cur *run
}

// run is one timeline with its goroutine.
type run struct {
	tl   *Timeline
	loop *lifecycle.Loop
}

// FileKind names the timeline's files.
const FileKind = "timeline"

// Configure runs a timeline with opts (its OnFinal is the runner's): the running one when its
// window, keep and settle are opts', a new one otherwise.
func (r *Runner) Configure(opts Options) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [3]time.Duration{opts.Window, opts.Keep, opts.Settle}
	if r.cur != nil && r.key == key {
		return
	}
	_ = r.closeLocked(context.Background()) // its windows close at once
	run := &run{}
	files := &recorder.Beside{Kind: FileKind, Dirs: r.Dirs, OnError: r.OnFileError}
	if files.Dirs == nil {
		files.Dirs = func() map[string]recorder.Options { return nil }
	}
	opts.OnFinal = func(w Window) { files.WriteJSON(w) }
	run.tl = New(opts)
	run.loop = lifecycle.Go(func(ctx context.Context) error {
		defer files.Close()
		return run.tl.Run(ctx)
	})
	r.key, r.cur = key, run
	r.Hub.tl.Store(run.tl)
}

// Close stops the running timeline, if any, and closes its files, waiting until ctx ends; the
// hub then has none. It is idempotent; a later Configure starts a timeline again.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeLocked(ctx)
}

func (r *Runner) closeLocked(ctx context.Context) error {
	if r.cur == nil {
		return nil
	}
	r.Hub.tl.CompareAndSwap(r.cur.tl, nil)
	err := r.cur.loop.Close(ctx)
	r.cur = nil
	return err
}
