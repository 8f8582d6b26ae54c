package shadow

import "time"

// Status is a runner's state and counters, as the admin API shows them.
type Status struct {
	Name string `json:"name"`
	// Mode is synthetic, trace or headroom.
	Mode string `json:"mode"`
	// State is running, waiting, paused, stopped, stopping or done.
	State string `json:"state"`
	// PauseReason is why the guard rails paused the load, while paused.
	PauseReason string `json:"pause_reason,omitempty"`
	// Rate is the rate asked for now (requests per second; a trace load's speedup), ConfigRate
	// the config's, MaxRate the ceiling an admin call may set.
	Rate       float64 `json:"rate"`
	ConfigRate float64 `json:"config_rate"`
	MaxRate    float64 `json:"max_rate"`
	// AchievedRate is the rate requests were sent at over the last 10 s (or since the start).
	AchievedRate float64 `json:"achieved_rate"`
	// Draining is true while an ended schedule (stopped, done, replaced) still has requests
	// released and not yet finished; a load is settled when it is done or stopped and not
	// draining.
	Draining bool `json:"draining"`
	// InFlight and MaxInFlight: requests in flight now, and the bound.
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int   `json:"max_in_flight"`
	// Sent, OK and Errors count requests since the runner was made (across reloads); Dropped
	// counts arrivals not sent because MaxInFlight requests were in flight.
	Sent    int64 `json:"sent"`
	OK      int64 `json:"ok"`
	Errors  int64 `json:"errors"`
	Dropped int64 `json:"dropped"`
	// LastError is what the most recent failed request failed with (an HTTP status or a
	// transport error), to tell an operator why Errors grows.
	LastError string `json:"last_error,omitempty"`
	// Pauses and Resumes count guard-rail pauses.
	Pauses  uint64 `json:"pauses"`
	Resumes uint64 `json:"resumes"`
	// LagP50Ms, LagP99Ms and LagMaxMs are the schedule lag (release − intended time) of the
	// current (or last) schedule: how late the generator inside the proxy was.
	LagCount int64   `json:"lag_count"`
	LagP50Ms float64 `json:"lag_p50_ms"`
	LagP99Ms float64 `json:"lag_p99_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
	// Headroom is a headroom probe's report.
	Headroom *HeadroomReport `json:"headroom,omitempty"`
}

// Status returns the runner's status.
func (r *Runner) Status() Status {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applyLocked(now) // the clock may have moved the load on (its duration ended) since the last tick
	rate, state := r.wantRateLocked(now)
	st := Status{
		Name: r.cfg.Name, Mode: r.cfg.mode(), State: state, Rate: rate, MaxRate: r.cfg.MaxRate,
		ConfigRate: r.cfg.Arrival.Rate, InFlight: r.inFlight.Load(), MaxInFlight: r.cfg.MaxInFlight,
		Sent: r.sent.Load(), OK: r.ok.Load(), Errors: r.errs.Load(), Dropped: r.dropped.Load(),
		Pauses: r.pauses.Load(), Resumes: r.resumes.Load(), Draining: r.draining > 0 || (r.run != nil && state != StateRunning && state != StateWaiting && state != StatePaused),
	}
	if r.cfg.Trace != nil {
		st.ConfigRate = r.cfg.Speedup
	}
	if e := r.lastErr.Load(); e != nil {
		st.LastError = *e
	}
	if state == StatePaused {
		st.PauseReason = r.pauseReason
	}
	lag := r.lastLag
	if r.run != nil {
		if c := r.run.counters.Load(); c != nil {
			st.Dropped += c.Dropped
			lag = c.Lag
		}
	}
	st.LagCount, st.LagP50Ms, st.LagP99Ms, st.LagMaxMs = lag.Count, ms(lag.P50), ms(lag.P99), ms(lag.Max)
	if n := len(r.samples); n > 1 {
		a, b := r.samples[0], r.samples[n-1]
		if d := b.t.Sub(a.t).Seconds(); d > 0 {
			st.AchievedRate = float64(b.sent-a.sent) / d
		}
	}
	if r.headroom != nil {
		h := r.headroom.report(now)
		st.Headroom = &h
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
