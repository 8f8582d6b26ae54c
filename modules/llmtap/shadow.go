package llmtap

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/shadow/inproc"
)

// ShadowConfig is one shadow load: synthetic (or trace-replayed) requests that llmtap sends,
// from inside the proxy, through a live route of the same proxy, so that the same handler
// measures them — as traffic class "shadow" ("replay" for a trace) — beside the live traffic
// (JSON `"shadows": [{…}]` of the llmtap app, Caddyfile `shadow <name> { … }` in the llmtap
// global option). Responses are read to their end and discarded.
//
// Each request carries the Llmtap-Shadow header with a mark signed by a key this process drew
// at startup; the handler classifies a request as shadow only when the mark verifies, and
// removes it before proxying, so upstreams never see it. A client sending the header is live
// traffic (counted in llmtap_shadow_marker_forged_total).
//
// A shadow load runs from the moment its config is loaded (after start_after, within its
// window, for its duration) until it is stopped through the admin API (POST
// /llmtap/shadow/<name>/stop), and pauses while the guard rails (GuardConfig) hold it. Loads
// are kept per name across config reloads: a reload with the same config keeps the running
// load untouched; a changed config is applied to it in place, its counters continuing.
type ShadowConfig struct {
	// Name identifies the load in the admin API, logs and metrics; names are unique. Required.
	Name string `json:"name"`

	// URL is where the requests go: the full URL of a live route through this proxy (for
	// example http://127.0.0.1:8080/v1/chat/completions), so that they pass the llmtap handler
	// and the same reverse proxy as live requests. A URL that does not pass a llmtap handler
	// sends unmeasured load. Required.
	URL string `json:"url"`

	// Model is the "model" of every request body. Required for synthetic load; a trace load
	// defaults to the model the trace names.
	Model string `json:"model,omitempty"`

	// EndpointType is the body format: chat (OpenAI chat completions), completions,
	// messages (Anthropic) or ollama_chat. Default: chat.
	EndpointType string `json:"endpoint_type,omitempty"`

	// Rate is the mean request rate, in requests per second (fractions allowed). Required for
	// synthetic load; it may be changed through the admin API up to MaxRate.
	Rate float64 `json:"rate,omitempty"`

	// Arrival is the arrival process, as AIPerf's --arrival-pattern: poisson (independent
	// arrivals, exponential gaps), gamma (gaps with shape Smoothness) or constant (evenly
	// spaced). Default: poisson.
	Arrival string `json:"arrival,omitempty"`

	// Smoothness is the gamma shape k (arrival gamma only): below 1 burstier than Poisson,
	// above 1 smoother; the gaps' coefficient of variation is 1/√k. Default: 1.
	Smoothness float64 `json:"smoothness,omitempty"`

	// ISL and ISLStddev are the mean and standard deviation of the prompt length in tokens
	// (o200k_base, exact: prompts are cut from an embedded text). Default: 550 and 0.
	ISL       float64 `json:"isl,omitempty"`
	ISLStddev float64 `json:"isl_stddev,omitempty"`

	// OSL and OSLStddev are the mean and standard deviation of the output length, sent as
	// max_completion_tokens (max_tokens for completions and messages). Zero means no limit.
	// Force exact lengths with Extra min_tokens:N and ignore_eos:true where the server has
	// them. Default: 0 and 0.
	OSL       float64 `json:"osl,omitempty"`
	OSLStddev float64 `json:"osl_stddev,omitempty"`

	// Extra are members merged into every body, as AIPerf's --extra-inputs: "key:value" with
	// the value typed as JSON (min_tokens:128, ignore_eos:true), or a JSON object.
	Extra []string `json:"extra,omitempty"`

	// Streaming asks for streamed responses. Default: true.
	Streaming *bool `json:"streaming,omitempty"`

	// Headers are sent with every request (for example an Authorization the route needs).
	Headers map[string]string `json:"headers,omitempty"`

	// Seed seeds the prompts, lengths and arrivals, so a load repeats exactly. Default: 42.
	Seed uint64 `json:"seed,omitempty"`

	// Entries is how many distinct bodies are built at load time and sent in turn.
	// Default: 100.
	Entries int `json:"entries,omitempty"`

	// StartAfter delays the first request after the config is loaded (or the load started).
	// Default: 0.
	StartAfter caddy.Duration `json:"start_after,omitempty"`

	// Duration ends the load after it has run this long (after StartAfter); it then stays done
	// until started again. Default: 0, no end.
	Duration caddy.Duration `json:"duration,omitempty"`

	// Window restricts the load to a daily time window in UTC, "HH:MM-HH:MM" (it may wrap past
	// midnight, "22:00-06:00"); outside it the load waits. Default: always.
	Window string `json:"window,omitempty"`

	// MaxInFlight bounds the requests in flight; an arrival that finds it reached is dropped
	// and counted, never queued (the schedule is not delayed). At most 4096. Default: 64.
	MaxInFlight int `json:"max_in_flight,omitempty"`

	// MaxRate is the highest rate the admin API may set, in requests per second. At most
	// 2000. Default: Rate (the admin API may lower the rate but not raise it above the
	// config's), or Headroom.Max for a headroom probe.
	MaxRate float64 `json:"max_rate,omitempty"`

	// Share, above 1, makes this load one of Share equal shares of a load spread over that
	// many instances with the same config: Rate and MaxRate are the fleet's and this instance
	// sends 1/Share of them, its arrivals seeded from Seed and a value drawn once per process,
	// so the instances' Poisson processes are independent and add up to one Poisson process of
	// rate Rate at the servers (with the same seed they would arrive in step). Poisson
	// arrivals only; not with a trace or headroom. Default: 0, the whole load.
	Share int `json:"share,omitempty"`

	// Trace replays a trace file instead of synthetic load.
	Trace *ShadowTrace `json:"trace,omitempty"`

	// Headroom makes the load a headroom probe.
	Headroom *ShadowHeadroom `json:"headroom,omitempty"`

	// Stopped loads the shadow stopped: it starts only through POST
	// /llmtap/shadow/<name>/start. It applies when the load is first loaded; a reload keeps a
	// running load's state, whatever this says. Default: false (it starts with the config).
	Stopped bool `json:"stopped,omitempty"`
}

// ShadowTrace replays a recorded trace as shadow load: each request at its recorded time
// (divided by Speedup), measured as class "replay". Any format `llmtap replay` reads works
// (Mooncake/AIPerf JSONL, Azure and BurstGPT CSV, llmtap records and payloads): payload files
// are sent verbatim, the others get synthetic prompts of the recorded input length (sharing
// prefixes where the trace has hash_ids) and the recorded output length as the limit. Unlike
// `llmtap replay`, a session's turns are sent at their recorded times rather than after the
// previous turn's response. The trace ends the load when it runs out.
type ShadowTrace struct {
	// File is the trace file, read when the config is loaded. Required.
	File string `json:"file"`
	// Speedup replays this many times faster than recorded. Default: 1.
	Speedup float64 `json:"speedup,omitempty"`
	// Format is the trace format (auto, mooncake, records, payloads, azure, burstgpt).
	// Default: auto.
	Format string `json:"format,omitempty"`
	// MaxRequests replays only the first N requests. Default: 0, all.
	MaxRequests int `json:"max_requests,omitempty"`
}

// ShadowHeadroom is a headroom probe: the shadow rate starts at Start and rises by Step every
// StepDuration up to Max, beside the live traffic; each step is judged a grace period after it
// ends on the requests that started in it (half a step, at most 5 s): it passes when at least
// Attainment of the live requests (if there were MinLive or more) and of the shadow requests met
// every SLO. The probe stops at the first failing step, or when the guard rails pause it, and
// reports the headroom — the shadow requests/s and output tokens/s of the last passing step —
// with per-step live and shadow percentiles at GET /llmtap/shadow/<name>/headroom (JSON, or a
// table with ?format=text) and in the log.
type ShadowHeadroom struct {
	// Start, Step and Max are shadow rates in requests per second. Required: Start > 0,
	// Step > 0, Max ≥ Start.
	Start float64 `json:"start"`
	Step  float64 `json:"step"`
	Max   float64 `json:"max"`
	// StepDuration is how long each step runs. Default: 30s.
	StepDuration caddy.Duration `json:"step_duration,omitempty"`
	// SLO is the objective as AIPerf goodput metric:value pairs, e.g.
	// "time_to_first_token:500 inter_token_latency:50" (ms). Required.
	SLO string `json:"slo"`
	// Attainment is the fraction of requests that must meet the SLO. Default: 0.95.
	Attainment float64 `json:"attainment,omitempty"`
	// MinLive is how many live requests a step needs for live traffic to be judged.
	// Default: 5.
	MinLive int `json:"min_live,omitempty"`
}

// shadowState is the shadow feature's state in one App: the built loads, the guard settings
// (nil when the App has neither shadow load nor guard block) and the loads it holds.
type shadowState struct {
	cfgs    []inproc.Config
	stopped []bool
	guard   *guardSettings
}

// provisionShadows builds every shadow load's config (bodies, trace) and checks it.
func (a *App) provisionShadows() error {
	st := &a.shadow
	var errs []error
	seen := map[string]bool{}
	for i, sc := range a.Shadows {
		if sc == nil {
			continue
		}
		if seen[sc.Name] {
			errs = append(errs, fmt.Errorf("shadow %d: the name %q is used twice", i, sc.Name))
			continue
		}
		seen[sc.Name] = true
		c, err := inproc.Build(sc.spec(a.proc.Mark))
		if err != nil {
			errs = append(errs, fmt.Errorf("shadow %q: %w", sc.Name, err))
			continue
		}
		st.cfgs, st.stopped = append(st.cfgs, c), append(st.stopped, sc.Stopped)
	}
	g, err := a.Guard.settings()
	if err != nil {
		errs = append(errs, fmt.Errorf("guard: %w", err))
	}
	if a.Guard != nil || len(st.cfgs) > 0 {
		st.guard = g
	}
	return errors.Join(errs...)
}

// spec is the config without Caddy's types.
func (sc *ShadowConfig) spec(mark func(h http.Header, class, load string)) inproc.Spec {
	s := inproc.Spec{
		Name: sc.Name, URL: sc.URL, Model: sc.Model, EndpointType: sc.EndpointType,
		Rate: sc.Rate, Arrival: sc.Arrival, Smoothness: sc.Smoothness,
		ISL: sc.ISL, ISLStddev: sc.ISLStddev, OSL: sc.OSL, OSLStddev: sc.OSLStddev,
		Extra: sc.Extra, Streaming: sc.Streaming, Headers: sc.Headers, Seed: sc.Seed, Entries: sc.Entries,
		StartAfter: time.Duration(sc.StartAfter), Duration: time.Duration(sc.Duration), Window: sc.Window,
		MaxInFlight: sc.MaxInFlight, MaxRate: sc.MaxRate, Share: sc.Share, Mark: mark,
	}
	if t := sc.Trace; t != nil {
		s.Trace = &inproc.TraceSpec{File: t.File, Speedup: t.Speedup, Format: t.Format, MaxRequests: t.MaxRequests}
	}
	if h := sc.Headroom; h != nil {
		s.Headroom = &inproc.HeadroomSpec{Start: h.Start, Step: h.Step, Max: h.Max, StepDuration: time.Duration(h.StepDuration),
			SLO: h.SLO, Attainment: h.Attainment, MinLive: h.MinLive}
	}
	return s
}

// startShadows holds every load of the App (process.HoldShadows): a load no other config runs
// starts (unless it is loaded stopped); one that runs is adopted, and reconfigured when its
// config changed; a load no loaded config names any more is stopped.
func (a *App) startShadows() (func(), error) {
	return a.proc.HoldShadows(a.logger, a.shadow.cfgs, a.shadow.stopped)
}
