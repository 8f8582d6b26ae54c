package llmtap

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/record"
)

// MirrorConfig sends a copy of a sample of the live requests to a second upstream, fire and
// forget, and measures the copies as traffic class "mirror", so that the two upstreams' TTFT,
// ITL and latency can be compared on the same requests (GET /llmtap/mirror pairs them).
//
// The live request is never delayed or failed by its copy: which requests are copied is a hash
// of the request id (reproducible), the copy starts only once the live request's body has been
// read in full, from the bytes the handler already keeps (max_request_body), on a goroutine
// of its own with its own deadline; when max_in_flight copies are already running the request
// is skipped and counted, never queued. The copy's response is read to its end through the
// same decoder as live responses, and discarded.
//
// The copy carries the live request's method, path, query, body and headers, except
// hop-by-hop headers and headers that may carry credentials (Authorization, Cookie, API-key,
// token, secret, password, credential and subscription-key headers), which are removed unless
// named in forward_sensitive, and query parameters that may carry credentials (?key=,
// ?api_key=, ?access_token=, ?sig=, X-Amz-* and X-Goog-* signed-URL parameters, …), which are
// always removed.
// It carries the live request id as X-Request-Id, and X-Llmtap-Mirror-Of; a request that
// arrives with X-Llmtap-Mirror-Of is never copied, so a mirror pointed back at this proxy
// cannot multiply traffic. When inject_usage rewrote the live body, the copy carries the
// body the client sent.
//
// Mirroring pauses while the guard rails hold it paused (see MirrorGate). A config reload
// stops the copies the old config started (their records end as upstream_failure, "the
// mirror was stopped"); counts and pairs survive reloads.
type MirrorConfig struct {
	// Upstream is where the copies go: a URL with scheme http or https, a host and port, and
	// optionally a path prefix that is put before the live request's path
	// (http://10.0.0.2:8000, https://staging.example.com/llm). A bare host:port means http.
	// Required.
	Upstream string `json:"upstream"`

	// Sample is the fraction of live requests copied, in (0, 1]. The choice is a hash of the
	// request id and SampleSeed, so the same request ids are copied on every run. Default: 0.1.
	Sample float64 `json:"sample,omitempty"`

	// SampleSeed changes which requests the sample chooses. Default: 0.
	SampleSeed uint64 `json:"sample_seed,omitempty"`

	// MaxBody is the largest request body, in bytes, that is copied; a sampled request with a
	// larger body is skipped and counted (reason body_too_large). It may not exceed the
	// handler's max_request_body, since the copy is made from the bytes the handler keeps.
	// Default: 1 MiB.
	MaxBody int `json:"max_body,omitempty"`

	// MaxInFlight is the most copies running at once. A sampled request that would exceed it
	// is skipped and counted (reason over_cap), so a slow or stalled mirror upstream costs at
	// most this many goroutines and connections. Default: 64.
	MaxInFlight int `json:"max_in_flight,omitempty"`

	// Timeout bounds one copy, from its start to the end of its response; a copy that takes
	// longer is canceled and counted as failed. Default: 60s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// HeaderUp sets headers on every copy, replacing the live request's values; an empty
	// value removes the header. Use it to give the mirror upstream its own credentials
	// ("Authorization": "Bearer …"). Hop-by-hop headers cannot be set. Default: none.
	HeaderUp map[string]string `json:"header_up,omitempty"`

	// ForwardSensitive names credential headers that are copied from the live request as
	// they are (for a mirror upstream that accepts the same keys). Only credential headers may
	// be named: every other header is copied anyway. Default: none, every credential header is
	// removed.
	ForwardSensitive []string `json:"forward_sensitive,omitempty"`

	// Verdict sets the equivalence margins and the look schedule of the canary verdict that
	// GET /llmtap/mirror, the Connect API and `llmtap canary` give per model (better, same,
	// worse or not enough pairs yet). Default: the margins and looks of docs/canary.md. The
	// verdict state is process-wide like the pairs: a config whose verdict settings or mirror
	// upstream differ from the running ones starts every model's verdict afresh.
	Verdict *mirror.VerdictOptions `json:"verdict,omitempty"`
}

// The mirror state is process-wide (proc.mirror): it outlives config reloads like the
// measurement engine.

// MirrorGate is the process-wide pause switch of mirroring, for the guard rails: Pause(reason)
// stops new copies (sampled requests are then skipped with reason "paused"), Resume starts
// them again, Paused and State report. Copies already running are not interrupted.
func MirrorGate() *mirror.Gate { return proc.mirror.gate }

// options turns the config into mirror options.
func (c *MirrorConfig) options(measure mirror.Measurer) mirror.Options {
	return mirror.Options{
		Upstream:         c.Upstream,
		Sample:           c.Sample,
		Seed:             c.SampleSeed,
		MaxBody:          c.MaxBody,
		MaxInFlight:      c.MaxInFlight,
		Timeout:          time.Duration(c.Timeout),
		HeaderUp:         c.HeaderUp,
		ForwardSensitive: c.ForwardSensitive,
		Measure:          measure,
		Stats:            proc.mirror.stats,
		Gate:             proc.mirror.gate,
		Pairs:            proc.mirror.pairs,
	}
}

// Check reports what is wrong with the mirror options on their own (the Caddyfile parser
// calls it at the end of the block; validate checks them again with the handler's limits).
func (c *MirrorConfig) Check() error {
	if c.Verdict != nil {
		if err := c.Verdict.Validate(); err != nil {
			return fmt.Errorf("verdict: %w", err)
		}
	}
	return c.options(nil).Validate()
}

// validate checks the mirror config against the handler's capture limit.
func (c *MirrorConfig) validate(maxRequestBody int) error {
	if err := c.Check(); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	capture := maxRequestBody
	if capture == 0 {
		capture = 1 << 20
	}
	if c.MaxBody > capture {
		return fmt.Errorf("mirror max_body %d is larger than max_request_body %d: a copy is made from the bytes the handler keeps, so raise max_request_body too", c.MaxBody, capture)
	}
	return nil
}

// provisionMirror starts the handler's mirror.
func (h *Handler) provisionMirror() error {
	if h.Mirror == nil {
		return nil
	}
	if err := h.Mirror.validate(h.MaxRequestBody); err != nil {
		return err
	}
	m, err := mirror.New(h.Mirror.options(h.tap.WithPool(h.meters)))
	if err != nil {
		return fmt.Errorf("setting up the mirror: %w", err)
	}
	h.mirror = m
	var vo mirror.VerdictOptions
	if h.Mirror.Verdict != nil {
		vo = *h.Mirror.Verdict
	}
	proc.mirror.pairs.SetVerdict(h.Mirror.Upstream, vo)
	return nil
}

// releaseMirror stops the handler's copies; it runs before the engine is released, so their
// records still reach it.
func (h *Handler) releaseMirror() {
	if h.mirror != nil {
		_ = h.mirror.Close()
		h.mirror = nil
	}
}

// offerMirror offers the live request r to the mirror and arranges for the copy to start once
// its body has been read in full: at once when there is no body or inject_usage already read
// it, otherwise when the upstream's reads reach its end. The caller must call Abandon on the
// result when the exchange is over (it does nothing once the copy started). Nil-safe.
func (h *Handler) offerMirror(r *http.Request, id, class string, body *captureBody) *mirror.Request {
	if h.mirror == nil || class != record.ClassLive {
		return nil // only live traffic is copied, never llmtap's own shadow or replay load
	}
	q := h.mirror.Offer(r, id)
	switch {
	case q == nil:
	case body == nil:
		q.Send(nil, false)
	case body.ReadCloser == nil: // the body inject_usage read in full
		q.Send(body.buf, false)
	default:
		r.Body = &bodyEnd{ReadCloser: r.Body, body: body, length: r.ContentLength, q: q}
	}
	return q
}

// bodyEnd starts the copy when the request body has been read to its end: io.EOF, or as many
// bytes as its Content-Length (a reader may stop there without asking for EOF).
type bodyEnd struct {
	io.ReadCloser
	body   *captureBody
	length int64
	read   int64
	q      *mirror.Request
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF || (b.length > 0 && b.read >= b.length) {
		b.q.Send(b.body.buf, b.body.truncated)
	}
	return n, err
}

// mirrorDoc is the document GET /llmtap/mirror returns.
type mirrorDoc struct {
	// Counters are what happened to sampled requests since the process started.
	Counters mirror.Counters `json:"counters"`
	// Gate is the guard rails' pause switch.
	Gate mirror.GateState `json:"gate"`
	// Pairs compares live and mirror over the same requests, per model.
	Pairs mirror.Summary `json:"pairs"`
	// Verdicts are the canary verdicts, per model.
	Verdicts []mirror.ModelVerdict `json:"verdicts"`
}

// mirrorSummary serves GET /llmtap/mirror.
func (adminAPI) mirrorSummary(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	if t := activeTap(); t != nil {
		t.Flush() // so that pairs ended before this request are in
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(mirrorDoc{Counters: proc.mirror.stats.Snapshot(), Gate: proc.mirror.gate.State(), Pairs: proc.mirror.pairs.Summary(), Verdicts: proc.mirror.pairs.Verdicts()})
}

// mirrorPairList serves GET /llmtap/mirror/pairs?limit=N: the N most recent pairs (default 100)
// as JSON lines, oldest first, each with the live and the mirror TTFT, ITL and latency of one
// request.
func (adminAPI) mirrorPairList(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("limit must be a positive integer, got %q", v)}
		}
		limit = n
	}
	if t := activeTap(); t != nil {
		t.Flush()
	}
	pairs := proc.mirror.pairs.Pairs()
	pairs = pairs[max(0, len(pairs)-limit):]
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := range pairs {
		if err := enc.Encode(&pairs[i]); err != nil {
			return err
		}
	}
	return nil
}

// mirrorCollector exposes the mirror's counters to Prometheus, read from the process-wide
// counters at scrape time.
type mirrorCollector struct{}

var (
	descMirrorSampled   = prometheus.NewDesc("llmtap_mirror_sampled_total", "Live requests the sample chose for mirroring.", nil, nil)
	descMirrorSent      = prometheus.NewDesc("llmtap_mirror_sent_total", "Mirror requests started.", nil, nil)
	descMirrorCompleted = prometheus.NewDesc("llmtap_mirror_completed_total", "Mirror requests whose response was read to its end with a status below 400.", nil, nil)
	descMirrorFailed    = prometheus.NewDesc("llmtap_mirror_failed_total", "Mirror requests that got no response, an HTTP status of 400 or more, or a response that broke off.", nil, nil)
	descMirrorSkipped   = prometheus.NewDesc("llmtap_mirror_skipped_total", "Sampled requests not mirrored, by reason (over_cap, body_too_large, body_incomplete, paused, loop, stopped).", []string{"reason"}, nil)
	descMirrorInFlight  = prometheus.NewDesc("llmtap_mirror_in_flight", "Mirror requests running now.", nil, nil)
	descMirrorPaused    = prometheus.NewDesc("llmtap_mirror_paused", "1 while the guard rails hold mirroring paused, else 0.", nil, nil)
	descMirrorPauses    = prometheus.NewDesc("llmtap_mirror_pauses_total", "Times the guard rails paused mirroring.", nil, nil)
	descMirrorPairs     = prometheus.NewDesc("llmtap_mirror_pairs_total", "Live requests paired with the record of their mirror copy.", nil, nil)
)

func (mirrorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMirrorSampled, descMirrorSent, descMirrorCompleted, descMirrorFailed,
		descMirrorSkipped, descMirrorInFlight, descMirrorPaused, descMirrorPauses, descMirrorPairs} {
		ch <- d
	}
}

func (mirrorCollector) Collect(ch chan<- prometheus.Metric) {
	c := proc.mirror.stats.Snapshot()
	g := proc.mirror.gate.State()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descMirrorSampled, c.Sampled)
	counter(descMirrorSent, c.Sent)
	counter(descMirrorCompleted, c.Completed)
	counter(descMirrorFailed, c.Failed)
	for _, reason := range mirror.SkipReasons {
		counter(descMirrorSkipped, c.Skipped[reason], reason)
	}
	ch <- prometheus.MustNewConstMetric(descMirrorInFlight, prometheus.GaugeValue, float64(c.InFlight))
	paused := 0.0
	if g.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(descMirrorPaused, prometheus.GaugeValue, paused)
	counter(descMirrorPauses, g.Pauses)
	counter(descMirrorPairs, proc.mirror.pairs.Summary().Pairs)
}

// Interface guards
var (
	_ io.ReadCloser        = (*bodyEnd)(nil)
	_ prometheus.Collector = mirrorCollector{}
)
