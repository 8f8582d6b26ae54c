package llmtap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
	"github.com/llmtap/llmtap/telemetry/scrape"
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
	return o
}

func (c *TimelineConfig) validate() error {
	if c == nil {
		return nil
	}
	switch {
	case c.Window < 0 || c.Keep < 0 || c.Settle < 0:
		return fmt.Errorf("window, keep and settle must be positive")
	case c.Window > 0 && time.Duration(c.Window) < 10*time.Millisecond:
		return fmt.Errorf("window %v is shorter than 10ms", time.Duration(c.Window))
	case c.Window > 0 && c.Keep > 0 && c.Keep < c.Window:
		return fmt.Errorf("keep %v is shorter than one window (%v)", time.Duration(c.Keep), time.Duration(c.Window))
	}
	return nil
}

// corrHub routes GPU samples, server scrapes and finished records to the process's timeline
// and energy attributor, whichever config's runners produced them (proc.hub).
type corrHub struct {
	attr    *timeline.Attributor
	tl      atomic.Pointer[timeline.Timeline]
	gpuSeen atomic.Bool // some GPU poll has reached the attributor

	mu     sync.Mutex
	latest []gpu.Sample
}

// onGPU takes one poll of every GPU, with the engine's in-flight count at that moment.
func (h *corrHub) onGPU(s []gpu.Sample) {
	var inFlight int64
	if t := activeTap(); t != nil {
		inFlight = t.InFlight()
	}
	h.attr.Observe(s, inFlight)
	h.gpuSeen.Store(true)
	if tl := h.tl.Load(); tl != nil {
		tl.AddGPU(s)
	}
	h.mu.Lock()
	h.latest = append(h.latest[:0], s...)
	h.mu.Unlock()
}

// clearGPU forgets the latest poll when its source stops, so exporters show no stale GPU.
func (h *corrHub) clearGPU() {
	h.mu.Lock()
	h.latest = h.latest[:0]
	h.mu.Unlock()
}

func (h *corrHub) latestGPU(dst []gpu.Sample) []gpu.Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(dst, h.latest...)
}

func (h *corrHub) onServer(target string, sm *scrape.ServerMetrics) {
	if tl := h.tl.Load(); tl != nil {
		tl.AddServer(target, sm)
	}
}

// enrichGPU is the record pipeline step that gives each record its GPU figures (record.GPU),
// before the stats, recorders and exporters see it.
func enrichGPU(r *record.Record) {
	if proc.hub.gpuSeen.Load() {
		proc.hub.attr.Enrich(r)
	}
}

// timelineSink hands finished records to the running timeline.
type timelineSink struct{}

func (timelineSink) Consume(r *record.Record) {
	if tl := proc.hub.tl.Load(); tl != nil {
		tl.Add(r)
	}
}

// ActiveTimeline returns the running timeline, or nil when no loaded config runs one.
func ActiveTimeline() *timeline.Timeline { return proc.hub.tl.Load() }

// timelineRunner is the process's timeline, shared by every config with the timeline on
// (proc.pool, key "timeline"): the goroutine that closes its windows and the files it writes
// them to. A config with other window, keep or settle replaces the timeline in place.
type timelineRunner struct {
	*liveLogger

	mu  sync.Mutex // held while (re)configuring
	key [3]time.Duration
	cur *timelineRun
}

// timelineRun is one timeline with its goroutine.
type timelineRun struct {
	tl    *timeline.Timeline
	files *timelineFiles
	stop  chan struct{}
	done  chan struct{}
}

func (a *App) startTimeline() (err error) {
	if a.Timeline != nil && a.Timeline.Off {
		return nil
	}
	a.timeline, err = adopt(keyTimeline, a.logger, func(l *liveLogger) *timelineRunner { return &timelineRunner{liveLogger: l} },
		func(r *timelineRunner) error { r.configure(a.Timeline.options()); return nil })
	return err
}

func (a *App) stopTimeline() { release(keyTimeline, &a.timeline) }

// configure keeps the running timeline when its window, keep and settle are opts', and
// replaces it by a new, empty one otherwise.
func (r *timelineRunner) configure(opts timeline.Options) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [3]time.Duration{opts.Window, opts.Keep, opts.Settle}
	if r.cur != nil && r.key == key {
		return
	}
	r.stopLocked()
	run := &timelineRun{files: &timelineFiles{liveLogger: r.liveLogger, open: map[string]*timelineFile{}},
		stop: make(chan struct{}), done: make(chan struct{})}
	o := opts
	o.Models = modelLabels // one folding rule with /metrics and the summary
	o.InFlight = func() int64 {
		if t := activeTap(); t != nil {
			return t.InFlight()
		}
		return 0
	}
	o.OnFinal = run.files.write
	run.tl = timeline.New(o)
	go func() {
		defer close(run.done)
		run.tl.Run(run.stop)
		run.files.closeAll()
	}()
	r.key, r.cur = key, run
	proc.hub.tl.Store(run.tl)
}

func (r *timelineRunner) stopLocked() {
	if r.cur == nil {
		return
	}
	proc.hub.tl.CompareAndSwap(r.cur.tl, nil)
	close(r.cur.stop)
	<-r.cur.done
	r.cur = nil
}

// Destruct stops the timeline when the last config using it is gone.
func (r *timelineRunner) Destruct() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
	return nil
}

// timelineFiles writes final windows to timeline-<start>.jsonl in every folder being recorded
// to, starting a new file when the recorder of the folder would (its rotate_size and
// rotate_age). It is used by the timeline's goroutine only.
type timelineFiles struct {
	*liveLogger
	open   map[string]*timelineFile
	failed map[string]bool // folders whose failure was logged
	line   []byte
}

type timelineFile struct {
	f      *os.File
	opened time.Time
	size   int64
}

func (f *timelineFiles) write(w timeline.Window) {
	dirs := recordingDirs()
	for dir, tf := range f.open {
		if _, ok := dirs[dir]; !ok {
			f.close(dir, tf)
		}
	}
	if len(dirs) == 0 {
		return
	}
	line, err := json.Marshal(w)
	if err != nil {
		f.fail("", err)
		return
	}
	f.line = append(append(f.line[:0], line...), '\n')
	now := time.Now()
	for dir, opts := range dirs {
		tf := f.open[dir]
		if tf != nil && (tf.size+int64(len(f.line)) > opts.RotateBytes || now.Sub(tf.opened) >= opts.RotateAge) {
			f.close(dir, tf)
			tf = nil
		}
		if tf == nil {
			file, err := recorder.CreateFile(dir, "timeline", now)
			if err != nil {
				f.fail(dir, err)
				continue
			}
			tf = &timelineFile{f: file, opened: now}
			f.open[dir] = tf
		}
		n, err := tf.f.Write(f.line)
		tf.size += int64(n)
		if err != nil {
			f.fail(dir, err)
		}
	}
}

func (f *timelineFiles) fail(dir string, err error) {
	if f.failed == nil {
		f.failed = map[string]bool{}
	}
	if !f.failed[dir] {
		f.failed[dir] = true
		f.log().Error("writing the llmtap timeline file", zap.String("dir", dir), zap.Error(err))
	}
}

func (f *timelineFiles) close(dir string, tf *timelineFile) {
	if err := tf.f.Sync(); err != nil {
		f.fail(dir, err)
	}
	if err := tf.f.Close(); err != nil {
		f.fail(dir, err)
	}
	delete(f.open, dir)
}

func (f *timelineFiles) closeAll() {
	for dir, tf := range f.open {
		f.close(dir, tf)
	}
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
	tl := proc.hub.tl.Load()
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
