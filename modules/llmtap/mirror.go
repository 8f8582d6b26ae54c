package llmtap

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
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

// validate checks the mirror config against the handler's capture limit.
func (c *MirrorConfig) validate(maxRequestBody int) error {
	if err := c.options(nil).Validate(); err != nil {
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

// engineMeasurer measures copies with the engine and the handler's meter pool, the same
// decoders and limits as the handler's live requests.
type engineMeasurer struct {
	t    *tap.Tap
	pool *meter.Pool
}

func (e engineMeasurer) Begin(t0 time.Time, path string) *meter.Meter {
	return e.t.BeginWith(e.pool, t0, path)
}

func (e engineMeasurer) End(m *meter.Meter, end time.Time, failure, msg string) *record.Record {
	return e.t.End(m, end, failure, msg)
}

// provisionMirror starts the handler's mirror.
func (h *Handler) provisionMirror() error {
	if h.Mirror == nil {
		return nil
	}
	if err := h.Mirror.validate(h.MaxRequestBody); err != nil {
		return err
	}
	m, err := mirror.New(h.Mirror.options(engineMeasurer{t: h.tap, pool: h.meters}))
	if err != nil {
		return fmt.Errorf("setting up the mirror: %w", err)
	}
	h.mirror = m
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

// parseMirror reads a mirror block (the option name is the current token):
//
//	mirror <upstream> {
//	    sample            <fraction|percent> [<seed>]   # default 0.1
//	    max_body          <size>                        # default 1MiB
//	    max_in_flight     <n>                           # default 64
//	    timeout           <duration>                    # default 60s
//	    header_up         <name> [<value>]              # no value: remove the header
//	    forward_sensitive <header>...
//	}
func parseMirror(d *caddyfile.Dispenser) (*MirrorConfig, error) {
	c := new(MirrorConfig)
	if !d.NextArg() {
		return nil, d.Err("mirror needs an upstream URL, such as mirror http://10.0.0.2:8000")
	}
	c.Upstream = d.Val()
	if err := mirror.CheckUpstream(c.Upstream); err != nil {
		return nil, d.Errf("%v", err)
	}
	if d.NextArg() {
		return nil, d.Errf("mirror takes one upstream, got another: %q; put options in a block", d.Val())
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		switch opt {
		case "sample":
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("mirror sample takes a fraction (0.1 or 10%%) and optionally a seed")
			}
			f, err := parseFraction(args[0])
			if err != nil {
				return nil, d.Errf("mirror sample: %v", err)
			}
			c.Sample = f
			if len(args) == 2 {
				if c.SampleSeed, err = strconv.ParseUint(args[1], 10, 64); err != nil {
					return nil, d.Errf("mirror sample seed %q is not a non-negative integer", args[1])
				}
			}
		case "max_body":
			n, err := parseSize(d, "mirror max_body")
			if err != nil {
				return nil, err
			}
			c.MaxBody = n
		case "max_in_flight":
			args := d.RemainingArgs()
			if len(args) != 1 {
				return nil, d.Errf("mirror max_in_flight takes one number of requests")
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return nil, d.Errf("mirror max_in_flight: %q is not a positive number of requests", args[0])
			}
			c.MaxInFlight = n
		case "timeout":
			args := d.RemainingArgs()
			if len(args) != 1 {
				return nil, d.Errf("mirror timeout takes one duration, such as 60s")
			}
			dur, err := caddy.ParseDuration(args[0])
			if err != nil || dur <= 0 {
				return nil, d.Errf("mirror timeout: %q is not a positive duration, such as 60s", args[0])
			}
			c.Timeout = caddy.Duration(dur)
		case "header_up":
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("mirror header_up takes a header name and a value (no value removes the header)")
			}
			if err := mirror.CheckHeaderUp(args[0]); err != nil {
				return nil, d.Errf("mirror %v", err)
			}
			if c.HeaderUp == nil {
				c.HeaderUp = make(map[string]string)
			}
			c.HeaderUp[args[0]] = ""
			if len(args) == 2 {
				c.HeaderUp[args[0]] = args[1]
			}
		case "forward_sensitive":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return nil, d.Errf("mirror forward_sensitive needs at least one header name, such as Authorization")
			}
			for _, name := range args {
				if err := mirror.CheckForwardSensitive(name); err != nil {
					return nil, d.Errf("mirror %v", err)
				}
			}
			c.ForwardSensitive = append(c.ForwardSensitive, args...)
		default:
			return nil, d.Errf("unknown mirror option %q; expected sample, max_body, max_in_flight, timeout, header_up or forward_sensitive", opt)
		}
	}
	if err := c.options(nil).Validate(); err != nil {
		return nil, d.Errf("mirror: %v", err)
	}
	return c, nil
}

// Interface guards
var (
	_ mirror.Measurer = engineMeasurer{}
	_ io.ReadCloser   = (*bodyEnd)(nil)
)
