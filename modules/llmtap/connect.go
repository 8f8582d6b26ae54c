package llmtap

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmtap/llmtap/api"
)

func init() {
	caddy.RegisterModule(connectAdmin{})
	caddy.RegisterModule(APIHandler{})
}

// newService returns the TapService of this process: the running Process's measurement
// engine, recorders, mirror and SLOs of the JSON routes (admin.go) and, when the llmtap app
// runs them, the timeline and shadow load (without the app's timeline, windows come from the
// engine's rolling statistics). readOnly refuses the control RPCs; maxStreams bounds the
// timeline streams open at once (0: api.DefaultMaxStreams).
func newService(readOnly bool, maxStreams int) *api.Service {
	return api.New(api.Options{
		Host:          func() api.Host { return running.Load() },
		MaxStreams:    maxStreams,
		ReadOnly:      readOnly,
		StreamRefused: func() { running.Load().StreamRefused() },
	})
}

// SourceTimeline names windows that come from the app's timeline.
const SourceTimeline = api.SourceTimeline

// connectAdmin serves the Connect API (proto/llmtap/v1, llmtap.v1.TapService) on Caddy's admin
// listener beside the JSON routes, at /llmtap.v1.TapService/<Method>. The admin listener
// speaks HTTP/1.1 only (Caddy gives it no HTTP/2, cleartext or not), so it serves the Connect
// protocol (JSON and binary) and gRPC-Web; native gRPC clients, which need HTTP/2, use the
// llmtap_api handler on a site with h2c or TLS.
type connectAdmin struct{}

// CaddyModule returns the Caddy module information.
func (connectAdmin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.llmtap_connect",
		New: func() caddy.Module { return new(connectAdmin) },
	}
}

// Routes returns the admin route of the service.
func (connectAdmin) Routes() []caddy.AdminRoute {
	path, h := newService(false, 0).Handler()
	return guardRoutes([]caddy.AdminRoute{{Pattern: path, Handler: caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		serveConnect(h, w, r, caddy.ActiveContext())
		return nil
	})}})
}

// serveConnect serves one request of the service for the config whose context is cfg: a
// timeline stream ends when that config is unloaded (api.ServeHost).
func serveConnect(h http.Handler, w http.ResponseWriter, r *http.Request, cfg caddy.Context) {
	var ends context.Context
	if cfg.Context != nil {
		ends = cfg
	}
	api.ServeHost(h, w, r, ends)
}

// APIHandler serves the Connect API on a site route (http.handlers.llmtap_api, Caddyfile
// directive llmtap_api): requests whose path starts with /llmtap.v1.TapService/ are answered,
// every other request goes on to the next handler. A site can speak HTTP/2 (TLS, or h2c with
// `servers { protocols h1 h2 h2c }`), which native gRPC clients need; the admin listener
// cannot.
//
// A site may be reachable from other hosts, unlike the admin listener, so the handler is
// read-only unless Control is set: Summary, RecentRecords, StreamTimeline and the status RPCs
// answer, the shadow and recording controls are refused (PermissionDenied).
type APIHandler struct {
	// Control allows the RPCs that start and stop shadow load and recording. Only set it on a
	// site bound to loopback or otherwise protected (authentication, a private network):
	// anyone who reaches the site can then send load to the upstreams and write files.
	// Default: false (read-only).
	Control bool `json:"control,omitempty"`

	// MaxStreams bounds the StreamTimeline streams (llmtap top, dashboards) open at once on
	// this handler: each holds a goroutine and a connection for as long as its client stays,
	// and anyone who reaches the site can open them. One more is refused with the Connect
	// code resource_exhausted and counted in llmtap_api_streams_refused_total. Default: 64
	// (api.DefaultMaxStreams).
	MaxStreams int `json:"max_streams,omitempty"`

	prefix  string
	handler http.Handler
	ctx     caddy.Context
}

// CaddyModule returns the Caddy module information.
func (APIHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.llmtap_api",
		New: func() caddy.Module { return new(APIHandler) },
	}
}

// Provision builds the service handler.
func (h *APIHandler) Provision(ctx caddy.Context) error {
	h.ctx = ctx
	if h.MaxStreams < 0 {
		return fmt.Errorf("max_streams %d: want a positive number (0 means the default, %d)", h.MaxStreams, api.DefaultMaxStreams)
	}
	h.prefix, h.handler = newService(!h.Control, h.MaxStreams).Handler()
	return nil
}

// ServeHTTP answers the API's requests and passes the others on.
func (h *APIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !strings.HasPrefix(r.URL.Path, h.prefix) {
		return next.ServeHTTP(w, r)
	}
	serveConnect(h.handler, w, r, h.ctx)
	return nil
}

// Interface guards.
var (
	_ caddy.AdminRouter           = connectAdmin{}
	_ caddy.Provisioner           = (*APIHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*APIHandler)(nil)
)
