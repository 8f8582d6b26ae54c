package workload

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Spec is one workload as its user writes it: where requests go, what their bodies are, how
// long their prompts and outputs are, when they arrive, and for how long. It is the one
// definition of a load: the proxy's shadow config embeds it (JSON `"shadows": [{…}]` of the
// llmtap app, whose documentation these fields are), `llmtap bench` and `llmtap replay` fill
// the fields they share with it from their flags and check them with its methods, so a flag and
// a config field with the same meaning have one default and one check. A zero value means the
// field's default ([Spec.WithDefaults]); [Spec.Validate] reports every problem at once.
type Spec struct {
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
	StartAfter Duration `json:"start_after,omitempty"`

	// Duration ends the load after it has run this long (after StartAfter); it then stays done
	// until started again. Default: 0, no end.
	Duration Duration `json:"duration,omitempty"`

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
	Trace *TraceSpec `json:"trace,omitempty"`

	// Headroom makes the load a headroom probe.
	Headroom *HeadroomSpec `json:"headroom,omitempty"`
}

// TraceSpec replays a recorded trace as shadow load: each request at its recorded time
// (divided by Speedup), measured as class "replay". Any format `llmtap replay` reads works
// (Mooncake/AIPerf JSONL, Azure and BurstGPT CSV, llmtap records and payloads): payload files
// are sent verbatim, the others get synthetic prompts of the recorded input length (sharing
// prefixes where the trace has hash_ids) and the recorded output length as the limit. Unlike
// `llmtap replay`, a session's turns are sent at their recorded times rather than after the
// previous turn's response. The trace ends the load when it runs out.
type TraceSpec struct {
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

// HeadroomSpec is a headroom probe: the shadow rate starts at Start and rises by Step every
// StepDuration up to Max, beside the live traffic; each step is judged a grace period after it
// ends on the requests that started in it (half a step, at most 5 s): it passes when at least
// Attainment of the live requests (if there were MinLive or more) and of the shadow requests met
// every SLO. The probe stops at the first failing step, or when the guard rails pause it, and
// reports the headroom — the shadow requests/s and output tokens/s of the last passing step —
// with per-step live and shadow percentiles at GET /llmtap/shadow/<name>/headroom (JSON, or a
// table with ?format=text) and in the log.
type HeadroomSpec struct {
	// Start, Step and Max are shadow rates in requests per second. Required: Start > 0,
	// Step > 0, Max ≥ Start.
	Start float64 `json:"start"`
	Step  float64 `json:"step"`
	Max   float64 `json:"max"`
	// StepDuration is how long each step runs. Default: 30s.
	StepDuration Duration `json:"step_duration,omitempty"`
	// SLO is the objective as AIPerf goodput metric:value pairs, e.g.
	// "time_to_first_token:500 inter_token_latency:50" (ms). Required.
	SLO string `json:"slo"`
	// Attainment is the fraction of requests that must meet the SLO. Default: 0.95.
	Attainment float64 `json:"attainment,omitempty"`
	// MinLive is how many live requests a step needs for live traffic to be judged.
	// Default: 5.
	MinLive int `json:"min_live,omitempty"`
}

// Defaults of a Spec's zero values.
const (
	DefaultSeed             = 42
	DefaultISL              = 550
	DefaultEntries          = 100
	DefaultSpeedup          = 1
	DefaultHeadroomStepTime = 30 * time.Second
)

// WithDefaults returns s with the zero values that have a default replaced by it; the caller's
// trace and headroom are copied, not changed.
func (s Spec) WithDefaults() Spec {
	if s.EndpointType == "" {
		s.EndpointType = EndpointChat
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.ISL == 0 {
		s.ISL = DefaultISL
	}
	if s.Entries <= 0 {
		s.Entries = DefaultEntries
	}
	if t := s.Trace; t != nil && t.Speedup == 0 {
		tt := *t
		tt.Speedup = DefaultSpeedup
		s.Trace = &tt
	}
	if h := s.Headroom; h != nil && h.StepDuration == 0 {
		hh := *h
		hh.StepDuration = Duration(DefaultHeadroomStepTime)
		s.Headroom = &hh
	}
	return s
}

// Validate checks every field of the spec with its defaults and reports every problem at once;
// it reads no file (the trace is read when its bodies are built).
func (s Spec) Validate() error {
	s = s.WithDefaults()
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, "/ ?#") {
		errs = append(errs, fmt.Errorf("name %q: want a non-empty name without / ? # or spaces", s.Name))
	}
	if !HTTPURL(s.URL) {
		errs = append(errs, fmt.Errorf("url %q: want the http:// or https:// URL of a live route through this proxy", s.URL))
	}
	if _, err := s.Body(); err != nil {
		errs = append(errs, err)
	}
	if s.Entries > limits.MaxEntries {
		errs = append(errs, fmt.Errorf("entries %d: over the limit of %d (limits.MaxEntries)", s.Entries, limits.MaxEntries))
	}
	if _, err := s.Lengths(); err != nil {
		errs = append(errs, fmt.Errorf("isl/osl: %w", err))
	}
	if s.Window != "" {
		if _, err := gen.ParseWindow(s.Window); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Share < 0 || s.Share > 10000 {
		errs = append(errs, fmt.Errorf("share %d: want 1 to 10000 (0 or 1: the whole load)", s.Share))
	} else if s.Share > 1 {
		if p := strings.ToLower(strings.TrimSpace(s.Arrival)); p != "" && p != gen.PatternPoisson {
			errs = append(errs, fmt.Errorf("share needs poisson arrivals, not %q: only independent Poisson shares add up to the same process", s.Arrival))
		}
		if s.Trace != nil || s.Headroom != nil {
			errs = append(errs, errors.New("share applies to a synthetic load, not to a trace replay or a headroom probe"))
		}
	}
	switch {
	case s.Trace != nil:
		errs = append(errs, s.Trace.validate())
	case s.Headroom != nil:
		if _, err := stats.ParseSLOs(s.Headroom.SLO); err != nil {
			errs = append(errs, fmt.Errorf("headroom slo: %w", err))
		}
		if s.Rate != 0 {
			errs = append(errs, errors.New("a headroom probe takes its rates from headroom start/step/max, not rate"))
		}
	default:
		if s.Model == "" {
			errs = append(errs, errors.New("model is required"))
		}
		errs = append(errs, s.Arrivals().Validate())
	}
	return errors.Join(errs...)
}

// validate checks what of a trace can be checked without reading its file.
func (t *TraceSpec) validate() error {
	if t.File == "" {
		return errors.New("trace: a file is required")
	}
	if _, err := trace.ParseFormat(t.Format); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// HTTPURL reports whether u is an http:// or https:// URL with a host.
func HTTPURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}

// Stream reports whether the spec asks for streamed responses (Streaming unset: yes).
func (s Spec) Stream() bool { return s.Streaming == nil || *s.Streaming }

// Body returns the spec of the request bodies: its endpoint type, model, streaming and Extra
// members, parsed, with every problem of Extra and the endpoint type at once.
func (s Spec) Body() (BodySpec, error) {
	extras, err := ParseExtras(s.Extra)
	body := BodySpec{Endpoint: s.EndpointType, Model: s.Model, Stream: s.Stream(), Extra: extras}
	return body, errors.Join(err, body.Validate())
}

// Lengths returns the prompt and output lengths the spec draws, and their problems (a negative
// or non-finite mean or deviation, a length past limits.MaxTokens); callers name the fields.
func (s Spec) Lengths() (Pair, error) {
	p := Pair{ISL: Normal{Mean: s.ISL, Stddev: s.ISLStddev}, OSL: Normal{Mean: s.OSL, Stddev: s.OSLStddev}}
	return p, errors.Join(p.ISL.Validate(), p.OSL.Validate())
}

// Arrivals is the arrival process of a synthetic load: Arrival at Rate, with Smoothness.
func (s Spec) Arrivals() gen.ArrivalSpec {
	return gen.ArrivalSpec{Pattern: s.Arrival, Rate: s.Rate, Smoothness: s.Smoothness}
}
