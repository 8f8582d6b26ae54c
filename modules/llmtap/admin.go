package llmtap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/api"
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
//
// Every handler refuses other methods, counts that are not positive integers and missing
// engines through the helpers below, so each error has one wording: Caddy writes it as
// {"error": "…"} with its status.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.llmtap",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the admin routes, each refusing non-loopback clients and origins
// (adminguard.go).
func (a adminAPI) Routes() []caddy.AdminRoute {
	return guardRoutes([]caddy.AdminRoute{
		{Pattern: "/llmtap/summary", Handler: caddy.AdminHandlerFunc(a.summary)},
		{Pattern: "/llmtap/requests", Handler: caddy.AdminHandlerFunc(a.requests)},
		{Pattern: shadowRoute, Handler: caddy.AdminHandlerFunc(a.shadow)},       // shadow_admin.go
		{Pattern: shadowRoute + "/", Handler: caddy.AdminHandlerFunc(a.shadow)}, // shadow_admin.go
		{Pattern: "/llmtap/mirror", Handler: caddy.AdminHandlerFunc(a.mirrorSummary)},
		{Pattern: "/llmtap/mirror/pairs", Handler: caddy.AdminHandlerFunc(a.mirrorPairList)},
		{Pattern: dashboardPrefix, Handler: caddy.AdminHandlerFunc(a.dashboard)},
		{Pattern: "/llmtap/timeline", Handler: caddy.AdminHandlerFunc(a.timeline)},
	})
}

// apiErr is an admin route's error: Caddy answers status with {"error": message}.
func apiErr(status int, format string, args ...any) error {
	return caddy.APIError{HTTPStatus: status, Err: fmt.Errorf(format, args...)}
}

// allowMethod refuses (405) a request whose method is neither want nor one of also; the
// message names want.
func allowMethod(r *http.Request, want string, also ...string) error {
	if r.Method == want || slices.Contains(also, r.Method) {
		return nil
	}
	return apiErr(http.StatusMethodNotAllowed, "method %s not allowed; use %s", r.Method, want)
}

// countParam reads the query parameter name as a positive integer: def when it is absent or
// empty, 400 when it is anything else.
func countParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apiErr(http.StatusBadRequest, "%s must be a positive integer, got %q", name, v)
	}
	return n, nil
}

// writeJSON writes v as the JSON document of a route.
func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// writeJSONLines writes vs as JSON lines, in order.
func writeJSONLines[T any](w http.ResponseWriter, vs []T) error {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return nil
}

// errNoTap answers the routes that read the engine when no loaded config runs one.
var errNoTap = apiErr(http.StatusNotFound, "no loaded config uses the llmtap handler")

func (adminAPI) summary(w http.ResponseWriter, r *http.Request) error {
	if err := allowMethod(r, http.MethodGet); err != nil {
		return err
	}
	t := activeTap()
	if t == nil {
		return errNoTap
	}
	return writeJSON(w, api.NewSummaryDoc(t, RecorderDropped()))
}

func (adminAPI) requests(w http.ResponseWriter, r *http.Request) error {
	if err := allowMethod(r, http.MethodGet); err != nil {
		return err
	}
	t := activeTap()
	if t == nil {
		return errNoTap
	}
	limit, err := countParam(r, "limit", 100)
	if err != nil {
		return err
	}
	k, err := countParam(r, "slowest", 0)
	if err != nil {
		return err
	}
	recs := t.Recent().Last(limit)
	if k > 0 {
		recs = api.Slowest(recs, k)
	}
	return writeJSONLines(w, recs)
}

// mirrorSummary serves GET /llmtap/mirror.
func (adminAPI) mirrorSummary(w http.ResponseWriter, r *http.Request) error {
	if err := allowMethod(r, http.MethodGet); err != nil {
		return err
	}
	if t := activeTap(); t != nil {
		t.Flush() // so that pairs ended before this request are in
	}
	return writeJSON(w, api.MirrorDoc{Counters: proc.mirror.stats.Snapshot(), Gate: proc.mirror.gate.State(), Pairs: proc.mirror.pairs.Summary()})
}

// mirrorPairList serves GET /llmtap/mirror/pairs?limit=N: the N most recent pairs (default 100)
// as JSON lines, oldest first, each with the live and the mirror TTFT, ITL and latency of one
// request.
func (adminAPI) mirrorPairList(w http.ResponseWriter, r *http.Request) error {
	if err := allowMethod(r, http.MethodGet); err != nil {
		return err
	}
	limit, err := countParam(r, "limit", 100)
	if err != nil {
		return err
	}
	if t := activeTap(); t != nil {
		t.Flush()
	}
	pairs := proc.mirror.pairs.Pairs()
	return writeJSONLines(w, pairs[max(0, len(pairs)-limit):])
}

// timeline serves GET /llmtap/timeline[?since=<unix ms>&class=<class>&model=<model>]: the
// closed windows that start at or after since, with only the series of class and model when
// given.
func (adminAPI) timeline(w http.ResponseWriter, r *http.Request) error {
	if err := allowMethod(r, http.MethodGet); err != nil {
		return err
	}
	tl := proc.hub.tl.Load()
	if tl == nil {
		return apiErr(http.StatusNotFound, "no timeline is running: load a config with the llmtap global option (and no timeline off)")
	}
	q := timeline.Query{Class: r.URL.Query().Get("class"), Model: r.URL.Query().Get("model")}
	if v := r.URL.Query().Get("since"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return apiErr(http.StatusBadRequest, "since must be a Unix time in milliseconds, got %q", v)
		}
		q.Since = time.UnixMilli(ms)
	}
	return writeJSON(w, api.NewTimelineDoc(tl, q))
}

var _ caddy.AdminRouter = adminAPI{}
