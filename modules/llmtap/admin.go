package llmtap

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/api"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI serves what llmtap measured on Caddy's admin listener (localhost:2019 by default):
//
//	GET /llmtap/summary            AIPerf-layout summaries per (model, class, status class),
//	                               cumulative and over the rolling window
//	GET /llmtap/requests?limit=N   the N most recent request records as JSON lines, newest last
//	                               (&slowest=K: only the K slowest of them, slowest first)
//	GET /llmtap/mirror             mirroring counters, the guard rails' pause state, and live
//	                               vs mirror TTFT/ITL/latency over the same requests, per model
//	GET /llmtap/mirror/pairs?limit=N the N most recent live/mirror pairs as JSON lines
//	GET /llmtap/ui/                the live dashboard (dashboard.go)
//	GET /llmtap/timeline           fixed windows of request, GPU and server metrics
//	                               (?since=<unix ms>&class=&model=)
//	GET|POST /llmtap/shadow/…      shadow load status and control (api.ShadowRoute)
//	GET /llmtap/slo                SLO attainment, goodput and burn rates per (SLO, model),
//	                               in total and over rolling windows (slo.go)
//
// The handlers are package api's over the running process.Process (an api.Host); their errors
// become Caddy's, which it writes as {"error": "…"} with their status.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.llmtap",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// adminRoute serves one JSON route of the Process running at the time of each request.
func adminRoute(route func(api.Host, http.ResponseWriter, *http.Request) error) caddy.AdminHandler {
	return adminHandler(func(w http.ResponseWriter, r *http.Request) error {
		return route(running.Load(), w, r)
	})
}

// Routes returns the admin routes, each refusing non-loopback clients and origins
// (adminguard.go).
func (adminAPI) Routes() []caddy.AdminRoute {
	return guardRoutes([]caddy.AdminRoute{
		{Pattern: "/llmtap/summary", Handler: adminRoute(api.Summary)},
		{Pattern: "/llmtap/requests", Handler: adminRoute(api.Requests)},
		{Pattern: api.ShadowRoute, Handler: adminRoute(api.ShadowLoads)},
		{Pattern: api.ShadowRoute + "/", Handler: adminRoute(api.ShadowLoads)},
		{Pattern: "/llmtap/mirror", Handler: adminRoute(api.MirrorSummary)},
		{Pattern: "/llmtap/mirror/pairs", Handler: adminRoute(api.MirrorPairList)},
		{Pattern: dashboardPrefix, Handler: adminHandler(dashboard())},
		{Pattern: "/llmtap/timeline", Handler: adminRoute(api.TimelineWindows)},
		{Pattern: "/llmtap/slo", Handler: adminRoute(api.SLOSummary)},
	})
}

// adminHandler serves h on the admin listener: its api.HTTPError becomes Caddy's APIError.
func adminHandler(h func(http.ResponseWriter, *http.Request) error) caddy.AdminHandler {
	return caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		if he := (*api.HTTPError)(nil); errors.As(err, &he) {
			return caddy.APIError{HTTPStatus: he.Status, Err: he.Err}
		}
		return err
	})
}

var _ caddy.AdminRouter = adminAPI{}
