package llmtap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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

// timelineBody is the document GET /llmtap/timeline returns.
type timelineBody struct {
	// WindowMs is the window length in milliseconds.
	WindowMs float64 `json:"window_ms"`
	// Dropped counts records, GPU samples and scrapes that fell outside the kept windows.
	Dropped uint64 `json:"dropped"`
	// Windows are the closed windows asked for, oldest first.
	Windows []timeline.Window `json:"windows"`
}

// timeline serves GET /llmtap/timeline[?since=<unix ms>&class=<class>&model=<model>]: the
// closed windows that start at or after since, with only the series of class and model when
// given.
func (adminAPI) timeline(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	tl := proc.hub.Timeline()
	if tl == nil {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no timeline is running: load a config with the llmtap global option (and no timeline off)")}
	}
	q := timeline.Query{Class: r.URL.Query().Get("class"), Model: r.URL.Query().Get("model")}
	if v := r.URL.Query().Get("since"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("since must be a Unix time in milliseconds, got %q", v)}
		}
		q.Since = time.UnixMilli(ms)
	}
	body := timelineBody{WindowMs: float64(tl.Window()) / 1e6, Dropped: tl.Dropped(), Windows: tl.Windows(q)}
	if body.Windows == nil {
		body.Windows = []timeline.Window{}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(body)
}
