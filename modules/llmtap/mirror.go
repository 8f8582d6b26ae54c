package llmtap

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/capture"
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
// It carries the live request id as X-Request-Id, and X-Llmtap-Mirror-Of (the id and a
// signature keyed with a secret of this process); a request that arrives with an
// X-Llmtap-Mirror-Of this process signed is never copied, so a mirror pointed back at this
// proxy cannot multiply traffic, while a client sending the header does not opt out. When inject_usage rewrote the live body, the copy carries the
// body the client sent.
//
// Mirroring pauses while the guard rails hold it paused (GuardConfig). A config reload
// stops the copies the old config started: they are counted as cut (llmtap_mirror_cut_total),
// not failed, their records end as client_canceled ("cut: the mirror was stopped …") and they
// are never paired, so reloads do not weigh on the canary verdict; counts and pairs survive
// reloads.
type MirrorConfig struct {
	// Upstream is where the copies go: a URL with scheme http or https, a host and port, and
	// optionally a path prefix that is put before the live request's path
	// (http://10.0.0.2:8000, https://staging.example.com/llm). A bare host:port means http.
	// Required.
	Upstream string `json:"upstream"`

	// Sample is the fraction of live requests copied, in (0, 1]. Each request is a draw of its
	// own, keyed by a secret of this process and a counter, so a client can neither force nor
	// avoid the copy of its request (not with a reused X-Request-Id either); with SampleHeader
	// the choice is a hash of that header and SampleSeed instead. Default: 0.1.
	Sample float64 `json:"sample,omitempty"`

	// SampleSeed changes which requests the sample chooses. Default: 0.
	SampleSeed uint64 `json:"sample_seed,omitempty"`

	// SampleHeader names a request header whose value the sample is a hash of (with
	// SampleSeed), so that the same requests are copied on every run: a request id that a
	// trusted front (a gateway) sets. Whoever can set the header chooses whether a request is
	// copied, so name only a header clients cannot set. A request without it is sampled as by
	// default. Default: none.
	SampleHeader string `json:"sample_header,omitempty"`

	// TrustMirrorOf honours any X-Llmtap-Mirror-Of on an incoming request (it is then not
	// copied), not only one signed by this process: for proxies that mirror to one another
	// without sharing a process. A client can then opt its own requests out of the canary.
	// Default: false.
	TrustMirrorOf bool `json:"trust_mirror_of,omitempty"`

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
	// not worse, worse, not enough pairs yet, or inconclusive at the last look). Default: the
	// margins and looks of docs/canary.md. The verdict state is process-wide like the pairs: a
	// config whose verdict settings or mirror upstream differ from the running ones starts
	// every model's verdict afresh, and a new mirror upstream also empties the window of pairs
	// the summary is over.
	Verdict *mirror.VerdictOptions `json:"verdict,omitempty"`
}

// options turns the config into mirror options sharing the process's mirror state ms.
func (c *MirrorConfig) options(measure mirror.Measurer, ms process.MirrorState) mirror.Options {
	return mirror.Options{
		Upstream:         c.Upstream,
		Sample:           c.Sample,
		Seed:             c.SampleSeed,
		SampleHeader:     c.SampleHeader,
		TrustMirrorOf:    c.TrustMirrorOf,
		MaxBody:          c.MaxBody,
		MaxInFlight:      c.MaxInFlight,
		Timeout:          time.Duration(c.Timeout),
		HeaderUp:         c.HeaderUp,
		ForwardSensitive: c.ForwardSensitive,
		Measure:          measure,
		Stats:            ms.Stats,
		Gate:             ms.Gate,
		Pairs:            ms.Pairs,
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
	return c.options(nil, process.MirrorState{}).Validate()
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
	// The copies' records take the handler's route: its recorder writes them too, and its SLOs
	// judge the pairs (mirror.Pairer; the SLO tracker counts live records only).
	o := h.Mirror.options(h.tap.WithPool(h.meters, h.route), h.proc.Mirroring)
	m, err := mirror.New(o)
	if err != nil {
		return fmt.Errorf("setting up the mirror: %w", err)
	}
	h.mirror = m
	var vo mirror.VerdictOptions
	if h.Mirror.Verdict != nil {
		vo = *h.Mirror.Verdict
	}
	h.proc.Mirroring.Pairs.SetVerdict(h.Mirror.Upstream, vo)
	return nil
}

// releaseMirror stops the handler's copies; it runs before the engine is released, so their
// records still reach it. It leaves h.mirror set: the unloaded config's requests still running
// read it (offerMirror) without a lock, and a closed Mirror skips their copies (reason stopped).
func (h *Handler) releaseMirror() {
	if h.mirror != nil {
		_ = h.mirror.Close(context.Background()) // idempotent; its copies are cancelled: they end at once
	}
}

// offerMirror offers the live request r to the mirror (mirror.OfferBody); only live traffic
// is copied, never llmtap's own shadow or replay load. Nil-safe.
func (h *Handler) offerMirror(r *http.Request, id, class string, body *capture.Body) *mirror.Request {
	if h.mirror == nil || class != record.ClassLive {
		return nil
	}
	return h.mirror.OfferBody(r, id, body)
}
