// Package llmtap is the Caddy layer of llmtap: the http.handlers.llmtap middleware that measures
// the LLM traffic it passes, the admin API routes that serve what it measured, and the metrics
// it registers in Caddy's registry. It is a thin adapter: the measuring is done by the plain-Go
// packages under telemetry/. Its config is JSON; the Caddyfile syntax is parsed by package
// caddyfile, which fills these types.
package llmtap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/capture"
	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/inject"
	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/tenant"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler measures the LLM API traffic that passes through it: it parses streamed responses
// (SSE and NDJSON) as they are written and records time to first token, inter-token and
// inter-chunk latency, end-to-end latency and token counts for every request, without altering
// or delaying a byte. Put it before reverse_proxy (the Caddyfile directive orders itself there).
//
// Every request gets a request id: the incoming X-Request-Id header when present, otherwise a
// generated one. It is available as the placeholder {http.vars.llmtap.request_id}; the
// measured figures are placeholders too once the response has ended (see placeholders.go).
type Handler struct {
	// API forces the decoder used for responses ("openai.chat", "openai.completions",
	// "unknown", …) instead of choosing it from the request path. Default: chosen per request
	// from the path (…/chat/completions, …/completions) and the response content type.
	API string `json:"api,omitempty"`

	// MaxEventSize is the largest SSE event or NDJSON line, in bytes, that is decoded. A larger
	// event still passes to the client untouched; it is counted as oversized and not decoded,
	// so measuring never holds more than this per stream. Default: 1 MiB.
	MaxEventSize int `json:"max_event_size,omitempty"`

	// MaxRequestBody is how many bytes at the start of each request body are kept to read the
	// model, the stream flag and the prompt (for counting input tokens). The body itself always
	// passes to the upstream in full and unchanged. Default: 1 MiB.
	MaxRequestBody int `json:"max_request_body,omitempty"`

	// Tokenizer is the path of a Hugging Face tokenizer file (tokenizer.json) that counts the
	// tokens a server does not report, instead of o200k_base; records name it in tokenizer.
	// It is read once and shared by every handler naming it. A file that cannot be read, or
	// that uses a part llmtap does not support, fails the config. Default: o200k_base.
	Tokenizer string `json:"tokenizer,omitempty"`

	// MaxResponseBody is the largest non-streaming response body, in bytes, kept for decoding
	// usage and content. Larger bodies pass unchanged but are timed only. Default: 4 MiB.
	MaxResponseBody int `json:"max_response_body,omitempty"`

	// ServerTiming adds a Server-Timing trailer to responses whose client can take one (an
	// HTTP/2 or HTTP/3 request, or an HTTP/1.1 request that sent "TE: trailers" and got a
	// chunked response): "ttft;dur=…, itl;dur=…, total;dur=…", the time split's queue, prefill,
	// decode and network, and "llmtap;desc=…", with the figures known when the response ends.
	// Any other response is left exactly as it was. On a response that gets the trailer, the
	// upstream's own Server-Timing entries named llmtap (in its headers or trailers) are
	// removed, so that no entry beside llmtap's can pass for it; its other entries are kept.
	// Default: off.
	ServerTiming bool `json:"server_timing,omitempty"`

	// InjectUsage makes streaming OpenAI chat completions report the server's token count
	// even when the client did not ask for it. A POST to a …/chat/completions path whose JSON
	// body (at most max_request_body bytes) streams without stream_options.include_usage is
	// forwarded with "include_usage": true added (its Content-Length updated, every other
	// byte unchanged), and the usage-only chunk the server then sends before data: [DONE] is
	// measured but removed from the response, so the client receives what it would have
	// received without llmtap. The record's output_tokens_source is then "usage" instead of
	// "tokenizer". Requests that ask for usage themselves, do not stream, or cannot be read
	// within max_request_body pass unchanged. Legacy completions are left alone: some servers
	// (Ollama) change every chunk when include_usage is set, which the client would see.
	// The chunk can only be removed from a stream that is not compressed, and the body is
	// rewritten before the response's encoding is known: so an injected request whose client
	// accepts compression (most SDKs send Accept-Encoding: gzip) is forwarded with
	// Accept-Encoding: identity, and one whose client refuses identity is not injected. A
	// server that compresses all the same has its response passed unfiltered, never held. The
	// record's usage_injection says which of these happened. A response framed by a
	// Content-Length keeps it: the usage chunk is replaced by an SSE comment of its length,
	// which SSE clients skip. Deliberate limit: whether to rewrite depends on members anywhere
	// in the body and decides the request's headers (its Content-Length, Accept-Encoding), so
	// the body of a POST to a chat path is read whole (up to max_request_body bytes) before the
	// upstream is dialled: a body the client sends slowly reaches the upstream when it is
	// complete, which an LLM server needs before it can start anyway; a longer one is passed
	// on, uninjected, as soon as more than max_request_body bytes of it came. Default: off.
	InjectUsage bool `json:"inject_usage,omitempty"`

	// Record writes the measured requests to files (records, an AIPerf/Mooncake trace and,
	// opt-in, the request bodies) for replay; see RecordConfig. Default: not recorded.
	Record *RecordConfig `json:"record,omitempty"`

	// Mirror sends a copy of a sample of the live requests to a second upstream, fire and
	// forget, and measures the copies as traffic class "mirror"; see MirrorConfig. Default:
	// no mirror.
	Mirror *MirrorConfig `json:"mirror,omitempty"`

	// Tenant says where the tenant of a request comes from (a trusted header, a placeholder
	// of a verifying module, or a keyed hash of the API key); see TenantConfig. Default: no
	// tenants.
	Tenant *TenantConfig `json:"tenant,omitempty"`

	// SLO lists the service-level objectives of the live requests this handler measures:
	// per model and tenant, thresholds on time to first token, inter-token latency and request
	// latency, and an attainment target. Each request is counted against the first SLO that
	// selects its model and tenant, as meeting or missing each threshold, in the llmtap_slo_requests_total
	// counters of /metrics (attainment and burn rates over any window are computed from them
	// by PromQL) and in GET /llmtap/slo (attainment, goodput and burn rate over rolling
	// windows); see slo.Objective and docs/slo.md. Default: no SLOs.
	SLO []slo.Objective `json:"slo,omitempty"`

	// PassiveHeadroom estimates, from the live requests alone, the capacity left on each
	// upstream before their mean TTFT reaches an objective; see headroom.Config and
	// docs/headroom.md. Default: off.
	PassiveHeadroom *headroom.Config `json:"passive_headroom,omitempty"`

	app       *App             // the config's llmtap app, which holds the Process
	proc      *process.Process // app.proc
	tap       *tap.Tap
	route     *pipeline.Route // where its records go: made in Provision, never changed after
	meters    *meter.Pool
	logger    *zap.Logger
	recording *recording
	mirror    *mirror.Mirror
	tenant    *tenant.Source   // nil without a tenant option (tenant.go)
	passive   *headroom.Target // nil without passive_headroom

	streams *process.Streams // the app waits for them before it lets go of the Process
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.llmtap",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision attaches the handler to the llmtap app of its config (Caddy's ctx.App; a config
// without the llmtap global option gets a bare one, which runs none of the app's features)
// and through it to the process-wide measurement engine, which outlives config reloads.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	_, err := ctx.AppIfConfigured("llmtap")
	bare := errors.Is(err, caddy.ErrNotConfigured)
	app, err := ctx.App("llmtap")
	if err != nil {
		return fmt.Errorf("starting the measurement engine: %w", err)
	}
	h.app = app.(*App)
	h.app.bare = h.app.bare || bare
	h.proc, h.tap, h.streams = h.app.proc, h.app.proc.Tap(), new(process.Streams)
	if err := h.proc.MarkerKeyErr(); err != nil {
		return fmt.Errorf("%s: %w", MarkerKeyEnv, err)
	}
	counter, err := tokens.Load(h.Tokenizer)
	if err != nil {
		return fmt.Errorf("loading the tokenizer: %w", err)
	}
	h.app.attach(h) // from now on the app's Cleanup releases what the handler holds
	// The SLOs and the recorder join the route as they are provisioned, before any request.
	h.route = &pipeline.Route{Tokens: counter}
	if tr := h.proc.Tracer(); tr != nil {
		h.route.Spans = tr.Start
	}
	h.meters = meter.NewPool(meter.Options{
		API:            h.API,
		MaxEvent:       h.MaxEventSize,
		MaxRequestBody: h.MaxRequestBody,
		MaxBody:        h.MaxResponseBody,
	})
	if err := h.provisionMirror(); err != nil {
		return err
	}
	if err := h.provisionTenant(); err != nil {
		return err
	}
	if err := h.provisionSLO(); err != nil { // slo.go
		return err
	}
	if h.passive, err = h.proc.Passive.Acquire(h.PassiveHeadroom); err != nil {
		return err
	}
	return h.provisionRecording()
}

// Validate checks the configuration.
func (h *Handler) Validate() error {
	var errs []error
	if h.API != "" && !decode.Known(h.API) {
		errs = append(errs, fmt.Errorf("api %q is not a known API; expected one of %v", h.API, decode.APIs()))
	}
	if h.MaxEventSize < 0 {
		errs = append(errs, fmt.Errorf("max_event_size must not be negative, got %d", h.MaxEventSize))
	}
	if h.MaxRequestBody < 0 {
		errs = append(errs, fmt.Errorf("max_request_body must not be negative, got %d", h.MaxRequestBody))
	}
	if h.MaxResponseBody < 0 {
		errs = append(errs, fmt.Errorf("max_response_body must not be negative, got %d", h.MaxResponseBody))
	}
	errs = append(errs, h.validateSLO(), h.PassiveHeadroom.Validate()) // slo.go
	return errors.Join(errs...)
}

// endFor ends the measurement of a stream of this handler, for the request r written through
// tw, whose span is span: before the record leaves for the pipeline, its figures become
// placeholders and, when asked, a Server-Timing trailer (placeholders.go). r and tw may be nil.
func (h *Handler) endFor(r *http.Request, tw *tapWriter, m *meter.Meter, span trace.Span, failure, msg string) {
	rt := h.route
	if rt.Recorder != "" && h.streams.Abandoned() {
		unrecorded := *rt // its recorder is gone
		unrecorded.Recorder = ""
		rt = &unrecorded
		h.proc.CountDrop(process.DropDrainTimeout)
	}
	fin := h.tap.Finish(m, time.Now(), failure, msg)
	if r != nil {
		h.expose(r, tw, fin)
		if h.passive != nil {
			h.passive.Done(upstreamOf(r, "http.reverse_proxy.upstream.hostport"), tw.load, fin)
		}
	}
	h.tap.Submit(pipeline.Routed{Record: fin, Route: rt, Span: span})
	h.streams.End()
}

// ServeHTTP measures the exchange while passing it through to the next handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if caddyhttp.GetVar(r.Context(), "llmtap.request_id") != nil {
		// An outer llmtap (a top-level one around a handle block with its own) measures it.
		return next.ServeHTTP(w, r)
	}
	t0 := time.Now()
	h.streams.Begin()
	m := h.tap.BeginWith(h.meters, t0, r.URL.Path)
	rec := m.Record()
	rec.RequestID = r.Header.Get("X-Request-Id")
	if rec.RequestID == "" {
		rec.RequestID = h.proc.NewRequestID()
	}
	rec.Class = h.proc.Classify(r) // shadow/replay/mirror only with this process's mark
	h.recording.tag(r, rec)
	rec.Tenant = h.tenantOf(r) // tenant.go
	caddyhttp.SetVar(r.Context(), "llmtap.request_id", rec.RequestID)
	var span trace.Span
	if h.route.Spans != nil {
		span = h.route.Spans(r.Context(), r.Header, t0) // ended with the record, off the request path
	}

	w, endInject, original := h.injectUsage(w, r, m.MaxRequestBody(), rec)
	defer endInject()

	var body *capture.Body
	if original != nil {
		// The upstream reads the rewritten body; what is measured and recorded is the body
		// the client sent.
		body = capture.Whole(original)
	} else if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		body = capture.New(r.Body, r.ContentLength, m.MaxRequestBody())
		r.Body = body
	}
	// The copy starts once the body is read in full; Abandon does nothing after it started.
	mq := h.offerMirror(r, rec.RequestID, rec.Class, body)
	defer mq.Abandon()

	tw := &tapWriter{ResponseWriter: w, m: m, load: h.passive.Enter(t0), late: installVars(r, rec.Tenant), bufs: &h.proc.CopyBuffers}
	if h.ServerTiming {
		tw.timing = r
	}
	ut := new(meter.UpstreamTrace) // the upstream moments of the time split
	ended := false
	defer func() {
		if ended {
			return
		}
		// reverse_proxy aborts a response it cannot complete after the headers were sent (the
		// client or the upstream went away mid-stream) by panicking with http.ErrAbortHandler,
		// as the standard library's proxy does. The measurement must still end, or the request
		// stays in flight forever and its record is lost; the panic then goes on to the server.
		v := recover()
		failure, msg := record.ErrUpstream, fmt.Sprintf("the response was aborted mid-body: %v", v)
		if r.Context().Err() != nil || tw.clientGone {
			failure, msg = record.ErrCanceled, "the client closed the connection before the response completed"
		}
		if body != nil {
			m.RequestBody(body.Captured())
		}
		tw.endUpgrade()
		ut.Hand(m)
		h.endFor(r, tw, m, span, failure, msg)
		if v != nil {
			panic(v)
		}
	}()
	err := next.ServeHTTP(tw, ut.Request(r, t0))
	ended = true
	if span != nil {
		spanUpstream(span, r) // server.address/port: known only once reverse_proxy ran
	}

	failure, msg := "", ""
	if err != nil {
		var he caddyhttp.HandlerError
		if errors.As(err, &he) && !tw.wroteHeader && he.StatusCode > 0 {
			// The error handler writes this status after we return.
			m.Headers(he.StatusCode, http.Header{}, time.Now())
		}
		failure, msg = record.ErrUpstream, err.Error()
		if body != nil && !expectsContinue(r) {
			// writer.go: the model of a request no upstream read. Not for a client waiting
			// for "100 Continue": reading its body would send it one, which the plain proxy
			// does not.
			body.ReadUnsent(tw)
		}
	}
	// A canceled context alone does not make a cancel: a client that closes its connection as
	// soon as it has read the whole response (no keep-alive) cancels the context while the
	// handler chain is still returning. The response was incomplete only if the next handler
	// failed or a write to the client did.
	if ctxErr := r.Context().Err(); ctxErr != nil && errors.Is(ctxErr, context.Canceled) && (err != nil || tw.clientGone) {
		failure, msg = record.ErrCanceled, "the client closed the connection before the response completed"
	}
	if body != nil {
		m.RequestBody(body.Captured())
	}
	tw.endUpgrade()
	ut.Hand(m)
	h.endFor(r, tw, m, span, failure, msg)
	return err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

// expectsContinue reports whether the client waits for "100 Continue" before sending its body.
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get("Expect")), "100-continue")
}

// validateSLO checks the handler's SLOs.
func (h *Handler) validateSLO() error {
	if err := slo.Validate(h.SLO); err != nil {
		return fmt.Errorf("slo: %w", err)
	}
	return nil
}

// provisionSLO compiles the handler's SLOs into its route, which carries them beside its
// records to the Process's SLO tracker, which /metrics and GET /llmtap/slo report.
func (h *Handler) provisionSLO() error {
	if len(h.SLO) == 0 {
		return nil
	}
	if err := h.validateSLO(); err != nil {
		return err
	}
	h.route.SLO = h.proc.SLOTracker.NewSet(h.SLO)
	return nil
}

// injectUsage applies the inject_usage option to one request (inject.Request): the request's
// API is the handler's api option, else the one its path names. Without the option, w is
// returned unchanged.
func (h *Handler) injectUsage(w http.ResponseWriter, r *http.Request, limit int, rec *record.Record) (_ http.ResponseWriter, end func(), original []byte) {
	if !h.InjectUsage {
		return w, func() {}, nil
	}
	api := h.API
	if api == "" {
		api = decode.APIForPath(r.URL.Path)
	}
	return inject.Request(w, r, api, limit, h.MaxEventSize, rec)
}
