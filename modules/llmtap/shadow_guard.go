package llmtap

import (
	"errors"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/shadow/guard"
	"github.com/llmtap/llmtap/shadow/inproc"
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
// Mirroring follows the guard through shadow/mirror.Gate (MirrorGate in mirror.go): anything
// that implements guard.Pausable can be held by the guard with proc.guardTargets.Add.
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

// proc.guardTargets are what the guard pauses: every shadow load ("shadow/<name>") and
// mirroring ("mirror").
func init() {
	proc.guardTargets.Add("mirror", MirrorGate())
	proc.shadows.OnAdd = func(r *inproc.Runner) func() { return proc.guardTargets.Add("shadow/"+r.Name(), r) }
}

// guardRunner is the process's guard loop (a guard.Runner), shared by every config with
// shadow load or a guard block (proc.pool, key "guard"); a reload with the same settings
// keeps the loop (and its window) running, other settings replace it.
type guardRunner struct {
	*liveLogger
	loop *guard.Runner
}

func (a *App) startGuard() (err error) {
	if a.shadow.guard == nil {
		return nil
	}
	a.guard, err = adopt(keyGuard, a.logger, newGuardRunner,
		func(r *guardRunner) error { r.loop.Configure(*a.shadow.guard); return nil })
	return err
}

func (a *App) stopGuard() { release(keyGuard, &a.guard) }

func newGuardRunner(l *liveLogger) *guardRunner {
	r := &guardRunner{liveLogger: l}
	r.loop = &guard.Runner{Targets: &proc.guardTargets, OnChange: r.logChange}
	proc.guard.Store(r.loop)
	return r
}

// logChange logs and counts each pause and resume.
func (r *guardRunner) logChange(st guard.State, names []string) {
	fields := []zap.Field{zap.Strings("paused", names), zap.Int64("live_requests", st.LiveRequests),
		zap.Float64("live_ttft_p99_ms", st.LiveTTFTP99Ms), zap.Float64("live_error_rate", st.LiveErrorRate)}
	if st.Tripped {
		reason, _, _ := strings.Cut(st.Reason, " ")
		metricGuardPauses.WithLabelValues(reason).Inc()
		r.log().Warn("guard rails: pausing shadow load and mirroring", append(fields, zap.String("reason", st.Reason),
			zap.Time("clears_at", st.ClearsAt))...)
	} else {
		metricGuardResumes.Inc()
		r.log().Info("guard rails: resuming shadow load and mirroring", fields...)
	}
}

// Destruct stops the loop, resuming what it paused, when the last config using it is gone.
func (r *guardRunner) Destruct() error {
	proc.guard.CompareAndSwap(r.loop, nil)
	r.loop.Stop()
	return nil
}

// guardState returns the running guard's state, or nil.
func guardState() *guard.State {
	if g := proc.guard.Load(); g != nil {
		return g.State()
	}
	return nil
}

var (
	metricGuardPauses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmtap_shadow_guard_pauses_total",
		Help: "Times the guard rails paused shadow load and mirroring, by reason (live_ttft_p99, live_error_rate, upstream_status).",
	}, []string{"reason"})
	metricGuardResumes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmtap_shadow_guard_resumes_total",
		Help: "Times the guard rails resumed shadow load and mirroring after a cool-down.",
	})
)
