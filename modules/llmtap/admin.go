package llmtap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
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
//	                               (?since=<unix ms>&class=&model=; timeline.go)
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

func (adminAPI) summary(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	t := activeTap()
	if t == nil {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no loaded config uses the llmtap handler")}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(summaryDoc(t))
}

func (adminAPI) requests(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	t := activeTap()
	if t == nil {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no loaded config uses the llmtap handler")}
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("limit must be a positive integer, got %q", v)}
		}
		limit = n
	}
	recs := t.Recent().Last(limit)
	if v := r.URL.Query().Get("slowest"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("slowest must be a positive integer, got %q", v)}
		}
		recs = slowest(recs, k) // dashboard.go
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, rec := range recs {
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}

var _ caddy.AdminRouter = adminAPI{}

// summaryBody is the document GET /llmtap/summary returns.
type summaryBody struct {
	// InFlight is the number of requests being measured when the summary was taken.
	InFlight int64 `json:"in_flight"`
	// RecordsDropped counts records lost because the record pipeline's queue was full: the
	// requests passed, but their measurements are missing from the summary.
	RecordsDropped uint64 `json:"records_dropped"`
	// RecorderDropped counts measured requests the recorder could not write to its files
	// because its queue was full: they are in the summary but missing from the recording.
	RecorderDropped uint64 `json:"recorder_dropped"`
	// Summary holds the per-group statistics in AIPerf's layout.
	Summary stats.Summary `json:"summary"`
}

func summaryDoc(t *tap.Tap) summaryBody {
	return summaryBody{InFlight: t.InFlight(), RecordsDropped: t.Dropped(), RecorderDropped: RecorderDropped(), Summary: t.Stats().Summary()}
}
