package llmtap

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/timeline"
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
// The handlers are package api's (api.Admin) over this process's engines; their errors
// become Caddy's, which it writes as {"error": "…"} with their status.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.llmtap",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// admin serves the JSON routes over the process's engines.
var admin = api.Admin{
	Tap:             activeTap,
	RecorderDropped: RecorderDropped,
	Mirror: func() api.MirrorDoc {
		return api.MirrorDoc{Counters: proc.mirror.stats.Snapshot(), Gate: proc.mirror.gate.State(), Pairs: proc.mirror.pairs.Summary(), Verdicts: proc.mirror.pairs.Verdicts()}
	},
	MirrorPairs: func() []mirror.Pair { return proc.mirror.pairs.Pairs() },
	Timeline:    func() *timeline.Timeline { return proc.hub.Timeline() },
	Shadow:      shadowControl,
	SLO:         sloTracker, // slo.go
}

// shadowControl controls the process's shadow loads, for the admin routes and the Connect
// service alike.
var shadowControl = api.RunnerShadow{Runner: shadowRunner, Runners: shadowRunners, State: shadowStatus, Logged: logShadowControl}

// Routes returns the admin routes, each refusing non-loopback clients and origins
// (adminguard.go).
func (adminAPI) Routes() []caddy.AdminRoute {
	return guardRoutes([]caddy.AdminRoute{
		{Pattern: "/llmtap/summary", Handler: adminHandler(admin.Summary)},
		{Pattern: "/llmtap/requests", Handler: adminHandler(admin.Requests)},
		{Pattern: api.ShadowRoute, Handler: adminHandler(admin.ShadowLoads)},
		{Pattern: api.ShadowRoute + "/", Handler: adminHandler(admin.ShadowLoads)},
		{Pattern: "/llmtap/mirror", Handler: adminHandler(admin.MirrorSummary)},
		{Pattern: "/llmtap/mirror/pairs", Handler: adminHandler(admin.MirrorPairList)},
		{Pattern: dashboardPrefix, Handler: adminHandler(dashboard)},
		{Pattern: "/llmtap/timeline", Handler: adminHandler(admin.TimelineWindows)},
		{Pattern: "/llmtap/slo", Handler: adminHandler(admin.SLOSummary)},
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

func shadowStatus() api.ShadowDoc {
	doc := api.ShadowDoc{Shadows: []inproc.Status{}, Guard: guardState(), ForgedMarkers: proc.marks.forged.Load(),
		ExpiredMarkers: proc.marks.expired.Load(), ReplayedMarkers: proc.marks.replayed.Load(),
		HardMaxRate: inproc.HardMaxRate, HardMaxInFlight: inproc.HardMaxInFlight, PassiveHeadroom: passiveHeadroom.Estimates()}
	for _, r := range shadowRunners() {
		doc.Shadows = append(doc.Shadows, r.Status())
	}
	return doc
}

func logShadowControl(name, what string) {
	caddy.Log().Named("llmtap.shadow").Info("shadow load "+what+" through the admin API", zap.String("shadow", name))
}

var _ caddy.AdminRouter = adminAPI{}
