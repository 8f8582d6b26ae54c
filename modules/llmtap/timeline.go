package llmtap

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/recorder"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// TimelineConfig configures the timeline (JSON `"timeline"` of the llmtap app, Caddyfile
// `timeline { … }` in the llmtap global option): fixed windows that put the request metrics
// of every traffic class and model beside the GPU samples and the inference server's metrics
// of the same period. It is on whenever the llmtap app is loaded; GET /llmtap/timeline on the
// admin listener serves it, and when a handler records (its record option) every final window
// is also written to timeline-<UTC start>.jsonl in the recording folder (mode 0600).
// telemetry/timeline documents which window each figure lands in.
//
// A reload with the same window, keep and settle keeps the running timeline and its history;
// changing one of them starts a new, empty timeline.
type TimelineConfig struct {
	// Window is the length of one window. Default: 1s.
	Window caddy.Duration `json:"window,omitempty"`

	// Keep is how much history is kept and served (Keep/Window windows). Default: 15m.
	Keep caddy.Duration `json:"keep,omitempty"`

	// Settle is how long after its end a window is final: written to timeline.jsonl, and
	// marked "final" in the route. Streams that overlapped a window and end later still
	// revise it until then (and are counted in its "late" field after). Default: 10s.
	Settle caddy.Duration `json:"settle,omitempty"`

	// Off turns the timeline off (the route then answers 404). Default: false.
	Off bool `json:"off,omitempty"`
}

func (c *TimelineConfig) options() timeline.Options {
	var o timeline.Options
	if c != nil {
		o.Window, o.Keep, o.Settle = time.Duration(c.Window), time.Duration(c.Keep), time.Duration(c.Settle)
	}
	o.Models = modelLabels // one folding rule with /metrics and the summary
	o.InFlight = inFlight
	return o
}

func (c *TimelineConfig) validate() error {
	if c == nil {
		return nil
	}
	return c.options().Validate()
}

// ActiveTimeline returns the running timeline, or nil when no loaded config runs one.
func ActiveTimeline() *timeline.Timeline { return proc.hub.Timeline() }

// timelineRunner is the process's timeline (a timeline.Runner publishing to proc.hub), shared
// by every config with the timeline on (proc.pool, key "timeline"). A config with other
// window, keep or settle replaces the timeline in place.
type timelineRunner struct {
	*liveLogger
	run timeline.Runner
}

func (a *App) startTimeline() (err error) {
	if a.Timeline != nil && a.Timeline.Off {
		return nil
	}
	a.timeline, err = adopt(keyTimeline, a.logger, newTimelineRunner,
		func(r *timelineRunner) error { r.run.Configure(a.Timeline.options()); return nil })
	return err
}

func (a *App) stopTimeline() { release(keyTimeline, &a.timeline) }

func newTimelineRunner(l *liveLogger) *timelineRunner {
	r := &timelineRunner{liveLogger: l}
	r.run = timeline.Runner{Hub: proc.hub, Dirs: recordingDirs, OnFileError: func(dir string, err error) {
		r.log().Error("writing the llmtap timeline file", zap.String("dir", dir), zap.Error(err))
	}}
	return r
}

// Destruct stops the timeline when the last config using it is gone.
func (r *timelineRunner) Destruct() error {
	r.run.Stop()
	return nil
}

// recordingDirs returns the folders recorders write to now, with their recorders' options.
func recordingDirs() map[string]recorder.Options {
	proc.recMu.RLock()
	defer proc.recMu.RUnlock()
	dirs := make(map[string]recorder.Options, len(proc.recorders))
	for _, e := range proc.recorders {
		dirs[e.dir] = e.rec.Options()
	}
	if e := proc.runtimeRec.Load(); e != nil { // the recording started through the API
		dirs[e.rec.Options().Dir] = e.rec.Options()
	}
	return dirs
}
