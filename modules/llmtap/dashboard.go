package llmtap

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/ui"
)

// dashboardPrefix is where the live dashboard is served on the admin listener.
const dashboardPrefix = "/llmtap/ui/"

// dashboardPage is the page (package ui, assets inlined), built once on first use. (Set in
// init: dashboardRoutes refers to Routes, which refers back to the dashboard route.)
var dashboardPage func() (http.Handler, error)

func init() {
	dashboardPage = sync.OnceValues(func() (http.Handler, error) { return ui.Dashboard(dashboardRoutes) })
}

// dashboardRoutes lists the admin routes that answer now, for the page to read only those: all
// of llmtap's, less the timeline when no loaded config runs one.
func dashboardRoutes() []string {
	var routes []string
	for _, r := range (adminAPI{}).Routes() {
		if r.Pattern == "/llmtap/timeline" && ActiveTimeline() == nil {
			continue
		}
		routes = append(routes, r.Pattern)
	}
	return routes
}

// dashboard serves the live dashboard: one page whose scripts read the other /llmtap/ admin
// routes of the same origin.
func (adminAPI) dashboard(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed; use GET", r.Method)}
	}
	if r.URL.Path != dashboardPrefix {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("%s: the dashboard is the single page %s", r.URL.Path, dashboardPrefix)}
	}
	h, err := dashboardPage()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: fmt.Errorf("building the dashboard page: %w", err)}
	}
	h.ServeHTTP(w, r)
	return nil
}

// slowest returns the k slowest of recs, slowest first, for the dashboard's table: by request
// latency, or by duration where there is none (a failed or non-streaming request). It sorts a
// copy; recs stays as it was.
func slowest(recs []*record.Record, k int) []*record.Record {
	key := func(r *record.Record) float64 {
		if r.RequestLatencyMs != nil {
			return *r.RequestLatencyMs
		}
		return r.DurationMs
	}
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b *record.Record) int { return cmp.Compare(key(b), key(a)) })
	return out[:min(k, len(out))]
}
