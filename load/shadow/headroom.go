package shadow

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// A headroom probe runs steps of shadow load at rising rates beside live traffic. Each step
// is judged on the requests that *started* in it (live and shadow, as measured by the proxy),
// a grace period after it ends, so that requests still streaming at the step's end count: a
// step passes when at least Attainment of the live requests (when there are MinLive or more)
// and of the shadow requests met every SLO. The probe stops at the first failing step, or when
// the guard rails pause it (that step fails), or after the step at Max. The headroom is what
// the last passing step sustained: its achieved shadow request rate and output tokens/s.
//
// The shadow requests of a step are the probe's own: each carries an X-Request-Id made of the
// probe's random prefix and a number (requestID), and a shadow record whose request id lacks
// the prefix (another shadow load beside the probe, a previous probe's last requests) is not
// counted. Once the probe has ended (a failing step, the guard rails, the step at Max, or a
// stop through the admin API), its report no longer changes: later records are ignored and a
// step that was running ends when the probe did, so the JSON, the text table, the state the
// runner reports and the log line written at the end all show the same report.

// maxValues bounds the values one step keeps per class and metric.
const maxValues = 100_000

type classStats struct {
	n, good, failed int64
	tokens          int64
	ttft, itl       []float64
}

func (c *classStats) add(rec *record.Record, slos []stats.SLO) {
	c.n++
	if !rec.OK() {
		c.failed++
		return
	}
	if stats.Good(rec, slos) {
		c.good++
	}
	c.tokens += rec.OutputTokens
	if rec.TTFTMs != nil && len(c.ttft) < maxValues {
		c.ttft = append(c.ttft, *rec.TTFTMs)
	}
	if rec.ITLMs != nil && len(c.itl) < maxValues {
		c.itl = append(c.itl, *rec.ITLMs)
	}
}

type step struct {
	rate       float64
	start, end time.Time // end zero while running
	live       classStats
	shadow     classStats
	judged     bool
	passed     bool
	reason     string
}

type probe struct {
	cfg   HeadroomConfig
	grace time.Duration
	id    string // prefix of the request ids of the probe's own requests

	mu       sync.Mutex
	steps    []*step
	finished bool
	verdict  string

	reported bool // OnHeadroom was called (guarded by the runner's lock)
}

func (p *probe) isFinished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finished
}

func newProbe(cfg HeadroomConfig) *probe {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &probe{cfg: cfg, grace: min(cfg.StepDuration/2, 5*time.Second), id: "llmtap-headroom-" + hex.EncodeToString(b[:]) + "-"}
}

// requestID returns the request id of the probe's request number n.
func (p *probe) requestID(n int64) string { return p.id + strconv.FormatInt(n, 10) }

// stop ends a probe that is still running, as a stop through the admin API does.
func (p *probe) stop(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.finished {
		p.finish(now, "stopped through the admin API before the probe ended")
	}
}

// rate returns the rate the probe wants at now, moving through its steps, and whether it has
// finished.
func (p *probe) rate(now time.Time) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return 0, true
	}
	// Judge the steps whose grace period is over.
	for _, s := range p.steps {
		if !s.judged && !s.end.IsZero() && now.Sub(s.end) >= p.grace {
			p.judge(s)
			if !s.passed {
				p.finish(now, fmt.Sprintf("step at %v req/s failed: %s", s.rate, s.reason))
				return 0, true
			}
		}
	}
	var cur *step
	if n := len(p.steps); n > 0 {
		cur = p.steps[n-1]
	}
	switch {
	case cur == nil:
		cur = &step{rate: p.cfg.Start, start: now}
		p.steps = append(p.steps, cur)
	case cur.end.IsZero() && now.Sub(cur.start) >= p.cfg.StepDuration:
		cur.end = now
		next := cur.rate + p.cfg.Step
		if next > p.cfg.Max+1e-9 {
			break
		}
		cur = &step{rate: next, start: now}
		p.steps = append(p.steps, cur)
	}
	if !cur.end.IsZero() {
		// The last step is over: no load while it is judged.
		if cur.judged {
			p.finish(now, fmt.Sprintf("every step up to max %v req/s passed", p.cfg.Max))
			return 0, true
		}
		return 0, false
	}
	return cur.rate, false
}

// guardTripped fails the running step: the guard rails paused the load.
func (p *probe) guardTripped(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || len(p.steps) == 0 {
		return
	}
	now := time.Now()
	for _, s := range p.steps {
		if !s.judged {
			if s.end.IsZero() {
				s.end = now
			}
			p.judge(s)
		}
	}
	cur := p.steps[len(p.steps)-1]
	cur.passed, cur.reason = false, "guard rails: "+reason
	// The verdict names the first failing step: the one before may have ended, within its
	// grace period, failing on its own.
	first := cur
	if i := slices.IndexFunc(p.steps, func(s *step) bool { return !s.passed }); i >= 0 {
		first = p.steps[i]
	}
	p.finish(now, fmt.Sprintf("step at %v req/s failed: %s", first.rate, first.reason))
}

// finish ends the probe at now, under p.mu: a step still running ends there too, so that the
// report stops changing.
func (p *probe) finish(now time.Time, verdict string) {
	p.finished, p.verdict = true, verdict
	for _, s := range p.steps {
		if s.end.IsZero() {
			s.end = now
		}
	}
}

// judge decides a finished step, under p.mu.
func (p *probe) judge(s *step) {
	s.judged = true
	att := func(c *classStats) float64 {
		if c.n == 0 {
			return 1
		}
		return float64(c.good) / float64(c.n)
	}
	switch {
	case s.live.n >= int64(p.cfg.MinLive) && att(&s.live) < p.cfg.Attainment:
		s.reason = fmt.Sprintf("live requests met the SLO %.1f%% of the time (want %.1f%%)", 100*att(&s.live), 100*p.cfg.Attainment)
	case att(&s.shadow) < p.cfg.Attainment: // a step without shadow requests is judged on live ones
		s.reason = fmt.Sprintf("shadow requests met the SLO %.1f%% of the time (want %.1f%%)", 100*att(&s.shadow), 100*p.cfg.Attainment)
	default:
		s.passed = true
	}
}

func (p *probe) observe(rec *record.Record) {
	var shadow bool
	switch rec.Class {
	case record.ClassLive:
	case record.ClassShadow:
		if !strings.HasPrefix(rec.RequestID, p.id) {
			return // another shadow load's request
		}
		shadow = true
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return // the report is final
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		s := p.steps[i]
		if rec.Start.Before(s.start) {
			continue
		}
		if !s.end.IsZero() && !rec.Start.Before(s.end) || s.judged {
			return
		}
		if shadow {
			s.shadow.add(rec, p.cfg.SLOs)
		} else {
			s.live.add(rec, p.cfg.SLOs)
		}
		return
	}
}

// Percentiles are a few percentiles of a metric, in ms.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

func percentiles(vs []float64) *Percentiles {
	if len(vs) == 0 {
		return nil
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s)-1) + 0.5)
		return s[i]
	}
	return &Percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99)}
}

// ClassReport is one traffic class's requests in a step.
type ClassReport struct {
	// Requests started in the step and finished before it was judged; Errors failed.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Attainment is the fraction of Requests that met every SLO (1 with no requests).
	Attainment float64 `json:"attainment"`
	// RequestsPerSec and OutputTokensPerSec are over the step's duration.
	RequestsPerSec     float64 `json:"requests_per_sec"`
	OutputTokensPerSec float64 `json:"output_tokens_per_sec"`
	// TTFTMs and ITLMs are percentiles of time to first token and inter-token latency (ms).
	TTFTMs *Percentiles `json:"ttft_ms,omitempty"`
	ITLMs  *Percentiles `json:"itl_ms,omitempty"`
}

// StepReport is one step of a headroom probe.
type StepReport struct {
	// Rate is the shadow rate the step asked for (requests per second).
	Rate      float64     `json:"rate"`
	Start     time.Time   `json:"start"`
	DurationS float64     `json:"duration_s"`
	Live      ClassReport `json:"live"`
	Shadow    ClassReport `json:"shadow"`
	// Verdict is "pass", "fail", "" while the step is not judged yet, or "stopped" for a step
	// that was running when an earlier one failed; Reason says why it failed.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// HeadroomReport is what a headroom probe found.
type HeadroomReport struct {
	// State is "running" or "done".
	State string `json:"state"`
	// SLOs and Attainment are the objectives each step was judged by.
	SLOs       []stats.SLO `json:"slos"`
	Attainment float64     `json:"attainment"`
	// Verdict says why the probe ended.
	Verdict string `json:"verdict,omitempty"`
	// HeadroomRequestsPerSec and HeadroomOutputTokensPerSec are the extra load sustained
	// within the SLO: the achieved shadow rates of the last step that passed (0 when none did).
	HeadroomRequestsPerSec     float64 `json:"headroom_requests_per_sec"`
	HeadroomOutputTokensPerSec float64 `json:"headroom_output_tokens_per_sec"`
	// LastPassingRate is the rate that step asked for.
	LastPassingRate float64      `json:"last_passing_rate"`
	Steps           []StepReport `json:"steps"`
}

func (c *classStats) report(d time.Duration) ClassReport {
	r := ClassReport{Requests: c.n, Errors: c.failed, Attainment: 1, TTFTMs: percentiles(c.ttft), ITLMs: percentiles(c.itl)}
	if c.n > 0 {
		r.Attainment = float64(c.good) / float64(c.n)
	}
	if s := d.Seconds(); s > 0 {
		r.RequestsPerSec = float64(c.n) / s
		r.OutputTokensPerSec = float64(c.tokens) / s
	}
	return r
}

func (p *probe) report(now time.Time) HeadroomReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := HeadroomReport{State: "running", SLOs: p.cfg.SLOs, Attainment: p.cfg.Attainment, Verdict: p.verdict}
	if p.finished {
		h.State = "done"
	}
	for _, s := range p.steps {
		end := s.end
		if end.IsZero() {
			end = now
		}
		d := end.Sub(s.start)
		sr := StepReport{Rate: s.rate, Start: s.start, DurationS: d.Seconds(), Live: s.live.report(d), Shadow: s.shadow.report(d)}
		if !s.judged && p.finished {
			sr.Verdict, sr.Reason = "stopped", "the probe ended before this step was judged"
		}
		if s.judged {
			sr.Verdict, sr.Reason = "fail", s.reason
			if s.passed {
				sr.Verdict = "pass"
				h.HeadroomRequestsPerSec = sr.Shadow.RequestsPerSec
				h.HeadroomOutputTokensPerSec = sr.Shadow.OutputTokensPerSec
				h.LastPassingRate = s.rate
			}
		}
		h.Steps = append(h.Steps, sr)
	}
	return h
}

// Table writes the report as a text table, one row per step.
func (h HeadroomReport) Table() string {
	var b strings.Builder
	slos := make([]string, len(h.SLOs))
	for i, s := range h.SLOs {
		slos[i] = s.String()
	}
	fmt.Fprintf(&b, "headroom probe (%s): SLO %s met by ≥ %.0f%% of requests\n", h.State, strings.Join(slos, " "), 100*h.Attainment)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate\tshadow req/s\tshadow tok/s\tshadow ok%\tshadow TTFT p50/p99 ms\tlive n\tlive ok%\tlive TTFT p50/p99 ms\tlive ITL p99 ms\tverdict\t")
	pc := func(p *Percentiles) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f/%.0f", p.P50, p.P99)
	}
	p99 := func(p *Percentiles) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", p.P99)
	}
	// ok% of a class without requests is unknown, not 100 (its JSON attainment is 1).
	ok := func(c ClassReport) string {
		if c.Requests == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", 100*c.Attainment)
	}
	for _, s := range h.Steps {
		v := s.Verdict
		if v == "" {
			v = "…"
		}
		fmt.Fprintf(tw, "%g\t%.2f\t%.0f\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", s.Rate, s.Shadow.RequestsPerSec, s.Shadow.OutputTokensPerSec,
			ok(s.Shadow), pc(s.Shadow.TTFTMs), s.Live.Requests, ok(s.Live), pc(s.Live.TTFTMs), p99(s.Live.ITLMs), v)
	}
	tw.Flush()
	if h.Verdict != "" {
		fmt.Fprintf(&b, "%s\n", h.Verdict)
	}
	fmt.Fprintf(&b, "headroom: %.2f req/s, %.0f output tokens/s beside live traffic (step at %g req/s)\n",
		h.HeadroomRequestsPerSec, h.HeadroomOutputTokensPerSec, h.LastPassingRate)
	return b.String()
}
