package llmtap

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/shadow/guard"
	"github.com/llmtap/llmtap/telemetry/record"
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
}

// guardRunner is the process's guard loop, shared by every config with shadow load or a guard
// block (proc.pool, key "guard"); a reload with the same settings keeps the loop (and its
// window) running, other settings replace it.
type guardRunner struct {
	*liveLogger

	mu  sync.Mutex // held while (re)configuring
	cur *guardLoop
}

type guardLoop struct {
	cfg guard.Config
	g   *guard.Guard
	*liveLogger
	stop  chan struct{}
	done  chan struct{}
	state atomic.Pointer[guard.State]
}

func (a *App) startGuard() (err error) {
	if a.shadow.guard == nil {
		return nil
	}
	a.guard, err = adopt(keyGuard, a.logger, func(l *liveLogger) *guardRunner { return &guardRunner{liveLogger: l} },
		func(r *guardRunner) error { r.configure(*a.shadow.guard); return nil })
	return err
}

func (a *App) stopGuard() { release(keyGuard, &a.guard) }

// configure keeps the running loop when its settings are cfg, and replaces it otherwise.
func (r *guardRunner) configure(cfg guard.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur
	if old != nil && sameGuard(old.cfg, cfg) {
		return
	}
	l := &guardLoop{cfg: cfg, g: guard.New(cfg), liveLogger: r.liveLogger, stop: make(chan struct{}), done: make(chan struct{})}
	st, _ := l.g.Evaluate(time.Now())
	l.state.Store(&st)
	if old != nil {
		old.halt()
		if s := old.state.Load(); s != nil && s.Tripped {
			// A new guard starts clear; what the old one paused is resumed by its first
			// evaluation unless a limit is still crossed.
			proc.guardTargets.Apply(false, "")
		}
	}
	r.cur = l
	proc.guard.Store(l)
	go l.run()
}

// Destruct stops the loop, resuming what it paused, when the last config using it is gone.
func (r *guardRunner) Destruct() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.cur
	if l == nil {
		return nil
	}
	r.cur = nil
	proc.guard.CompareAndSwap(l, nil)
	l.halt()
	if s := l.state.Load(); s != nil && s.Tripped {
		proc.guardTargets.Apply(false, "")
	}
	return nil
}

func sameGuard(a, b guard.Config) bool { return reflect.DeepEqual(a, b) }

func (l *guardLoop) halt() {
	close(l.stop)
	<-l.done
}

func (l *guardLoop) observe(r *record.Record) {
	o := guard.Observation{Live: r.Class == record.ClassLive, Status: r.Status}
	switch r.Error {
	case "", record.ErrCanceled:
	case record.ErrHTTP:
		o.Failed = r.Status >= 500
	default:
		o.Failed = true
	}
	if r.TTFTMs != nil {
		o.TTFTMs, o.HasTTFT = *r.TTFTMs, true
	}
	l.g.Observe(time.Now(), o)
}

func (l *guardLoop) run() {
	defer close(l.done)
	every := min(max(l.g.Config().Window/20, 20*time.Millisecond), time.Second)
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-tk.C:
			st, changed := l.g.Evaluate(now)
			l.state.Store(&st)
			if !changed {
				continue
			}
			names := proc.guardTargets.Apply(st.Tripped, st.Reason)
			fields := []zap.Field{zap.Strings("paused", names), zap.Int64("live_requests", st.LiveRequests),
				zap.Float64("live_ttft_p99_ms", st.LiveTTFTP99Ms), zap.Float64("live_error_rate", st.LiveErrorRate)}
			if st.Tripped {
				reason, _, _ := strings.Cut(st.Reason, " ")
				metricGuardPauses.WithLabelValues(reason).Inc()
				l.log().Warn("guard rails: pausing shadow load and mirroring", append(fields, zap.String("reason", st.Reason),
					zap.Time("clears_at", st.ClearsAt))...)
			} else {
				metricGuardResumes.Inc()
				l.log().Info("guard rails: resuming shadow load and mirroring", fields...)
			}
		}
	}
}

// guardState returns the running guard's state, or nil.
func guardState() *guard.State {
	if l := proc.guard.Load(); l != nil {
		return l.state.Load()
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
