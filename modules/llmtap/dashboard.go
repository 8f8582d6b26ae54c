package llmtap

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/internal/process"
	"github.com/llmtap/llmtap/ui"
)

// dashboardPrefix is where the live dashboard is served on the admin listener.
const dashboardPrefix = "/llmtap/ui/"

// dashboardRoutes lists the admin routes that answer now, for the page to read only those: all
// of llmtap's, less the timeline when no loaded config runs one.
func dashboardRoutes() []string {
	var routes []string
	for _, r := range (adminAPI{}).Routes() {
		if p := running.Load(); r.Pattern == "/llmtap/timeline" && (p == nil || p.Hub.Timeline() == nil) {
			continue
		}
		routes = append(routes, r.Pattern)
	}
	return routes
}

// dashboard serves the live dashboard: one page (package ui, assets inlined, built on first
// use) whose scripts read the other /llmtap/ admin routes of the same origin.
func dashboard() func(http.ResponseWriter, *http.Request) error {
	page := sync.OnceValues(func() (http.Handler, error) { return ui.Dashboard(dashboardRoutes) })
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := api.AllowMethod(r, http.MethodGet, http.MethodHead); err != nil {
			return err
		}
		if r.URL.Path != dashboardPrefix {
			return api.Errorf(http.StatusNotFound, "%s: the dashboard is the single page %s", r.URL.Path, dashboardPrefix)
		}
		h, err := page()
		if err != nil {
			return api.Errorf(http.StatusInternalServerError, "building the dashboard page: %w", err)
		}
		h.ServeHTTP(w, r)
		return nil
	}
}

// DashboardEnv names the environment variable that sets where llmtap serves its dashboard on a
// listener of its own: a host:port ("127.0.0.1:2020" by default), or "off" for none. It is read
// when the first config using the llmtap handler is provisioned.
//
// Why a listener of its own: Caddy's admin listener refuses every request a browser makes
// without an Origin or a Referer (it tells browsers by their Sec-Fetch-* headers), and that is
// what a browser sends for a typed URL or a bookmark, so http://localhost:2019/llmtap/ui/ only
// opens once the admin config lists the empty origin. The dashboard listener serves the page at
// / (and /llmtap/ui/) and every llmtap admin route the page reads, under the same guard as on
// the admin listener (loopback clients and origins only unless LLMTAP_ADMIN_ALLOW allows more),
// plus the checks Caddy makes for browsers: a Host header naming a loopback host (against DNS
// rebinding) and no request another site made (Sec-Fetch-Site cross-site or same-site). It
// lives as long as any loaded config uses the handler; when its address is taken, llmtap logs
// why and carries on without it.
const DashboardEnv = "LLMTAP_DASHBOARD"

// defaultDashboardAddr is where the dashboard listener binds when DashboardEnv is unset: the
// port after Caddy's admin listener, on loopback.
const defaultDashboardAddr = "127.0.0.1:2020"

// dashboardServer is the dashboard's own listener, one per process, held in the Process
// (keyDashboard) by every app with a handler: the first hold starts it, the last LetGo stops
// it. A server that could not bind (or is turned off) is held all the same, serving nothing.
type dashboardServer struct {
	srv  *http.Server
	done chan struct{}
	addr string // the bound address, empty when none is served
}

// keyDashboard is the dashboard listener's key in the Process.
const keyDashboard = "dashboard"

// acquireDashboard takes a hold on the dashboard listener, starting it with the first hold;
// p.LetGo(keyDashboard) gives it back, the last one stopping the listener.
func acquireDashboard(p *process.Process, logger *zap.Logger) *dashboardServer {
	d, _, _ := process.Hold(p, keyDashboard, func() (*dashboardServer, error) { return startDashboard(logger), nil })
	return d
}

func startDashboard(logger *zap.Logger) *dashboardServer {
	d := new(dashboardServer)
	addr := strings.TrimSpace(os.Getenv(DashboardEnv))
	if addr == "" {
		addr = defaultDashboardAddr
	}
	if addr == "off" {
		return d
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Warn("the dashboard's own listener is not served; the dashboard stays on the admin listener (see the README)",
			zap.String("address", addr), zap.String("env", DashboardEnv), zap.Error(err))
		return d
	}
	d.srv = &http.Server{Handler: dashboardHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	d.done = make(chan struct{})
	d.addr = ln.Addr().String()
	go func() {
		defer close(d.done)
		d.srv.Serve(ln) //nolint:errcheck // ends with its Close
	}()
	logger.Info("llmtap dashboard", zap.String("url", "http://"+d.addr+"/"))
	return d
}

// Close stops the listener and waits for it.
func (d *dashboardServer) Close(context.Context) error {
	if d.srv == nil {
		return nil
	}
	err := d.srv.Close()
	<-d.done
	return err
}

// dashboardHandler serves the page at / and every llmtap admin route, errors as Caddy's admin
// listener writes them ({"error": "…"}).
func dashboardHandler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range (adminAPI{}).Routes() {
		mux.Handle(r.Pattern, outsideAdmin(r.Handler))
	}
	policy := adminPolicy()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, dashboardPrefix, http.StatusTemporaryRedirect)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := policy.CheckBrowser(r); err != nil {
			writeAdminError(w, refused(err))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// outsideAdmin serves an admin handler outside Caddy's admin listener.
func outsideAdmin(h caddy.AdminHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.ServeHTTP(w, r); err != nil {
			writeAdminError(w, err)
		}
	})
}

// writeAdminError writes err as Caddy's admin listener does: its status (500 for an error that
// is not an APIError) and {"error": message}.
func writeAdminError(w http.ResponseWriter, err error) {
	var apiErr caddy.APIError
	if !errors.As(err, &apiErr) {
		apiErr = caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	if apiErr.HTTPStatus == 0 {
		apiErr.HTTPStatus = http.StatusInternalServerError
	}
	if apiErr.Message == "" && apiErr.Err != nil {
		apiErr.Message = apiErr.Err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(apiErr.HTTPStatus)
	json.NewEncoder(w).Encode(apiErr) //nolint:errcheck // the client went away
}
