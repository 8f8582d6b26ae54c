package llmtap

import (
	"errors"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/load/guard"
)

// GuardConfig sets the guard rails of llmtap's own load (JSON `"guard"` of the llmtap app,
// Caddyfile `guard { … }` in the llmtap global option). Over a sliding window they watch the
// live traffic's time to first token and errors, and the status of every response; when a
// limit is crossed they pause every shadow load and mirroring, and resume them once no limit
// has been crossed for the cool-down. Each pause and resume is logged, counted
// (llmtap_shadow_guard_pauses_total by reason, llmtap_shadow_guard_resumes_total) and shown at
// GET /llmtap/shadow. The guard runs whenever the app has a shadow load or a guard block;
// without one, only the 429/503 rule with the default window and cool-down applies.
//
// Mirroring follows the guard through mirror.Gate (process.MirrorState.Gate).
type GuardConfig struct {
	// Window is the span of the sliding window. Default: 10s.
	Window caddy.Duration `json:"window,omitempty"`

	// TTFTP99 pauses shadow load when the live requests' 99th percentile time to first token
	// over the window exceeds it. Default: 0, no limit.
	TTFTP99 caddy.Duration `json:"ttft_p99,omitempty"`

	// ErrorRate pauses shadow load when more than this fraction of the live requests in the
	// window failed on the server's side (5xx, broken or truncated streams, no response).
	// Default: 0, no limit.
	ErrorRate float64 `json:"error_rate,omitempty"`

	// MinRequests is how many live requests the window must hold before the TTFT and error
	// limits are judged. Default: 10.
	MinRequests int `json:"min_requests,omitempty"`

	// Statuses pause shadow load as soon as the upstream returns one of them to any request,
	// live or shadow; the cool-down runs from that response. Default: [429, 503]. "off" in the
	// Caddyfile (an empty list in JSON with StatusesOff) turns the rule off.
	Statuses []int `json:"statuses,omitempty"`

	// StatusesOff turns the status rule off.
	StatusesOff bool `json:"statuses_off,omitempty"`

	// Cooldown is how long no limit may have been crossed before shadow load resumes.
	// Default: 30s.
	Cooldown caddy.Duration `json:"cooldown,omitempty"`
}

// guardSettings is a validated guard config.
type guardSettings = guard.Config

func (c *GuardConfig) settings() (*guardSettings, error) {
	g := &guard.Config{}
	if c != nil {
		*g = guard.Config{Window: time.Duration(c.Window), TTFTP99: time.Duration(c.TTFTP99), ErrorRate: c.ErrorRate,
			MinRequests: c.MinRequests, Statuses: c.Statuses, Cooldown: time.Duration(c.Cooldown)}
		if c.StatusesOff {
			if len(c.Statuses) > 0 {
				return nil, errors.New("statuses and statuses_off are exclusive")
			}
			g.Statuses = []int{}
		}
	}
	return g, g.Validate()
}

func (a *App) startGuard() (func(), error) {
	if a.shadow.guard == nil {
		return nil, nil
	}
	return a.proc.HoldGuard(a.logger, *a.shadow.guard)
}
