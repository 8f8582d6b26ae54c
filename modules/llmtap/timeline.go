package llmtap

import (
	"time"

	"github.com/caddyserver/caddy/v2"

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
	return c.options().Validate()
}

func (a *App) startTimeline() (func(), error) {
	if a.Timeline != nil && a.Timeline.Off {
		return nil, nil
	}
	return a.proc.HoldTimeline(a.logger, a.Timeline.options())
}
