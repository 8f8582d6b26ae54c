package llmtap

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/adminguard"
)

// llmtapAdminRoutes returns every route of every admin router llmtap registers (module ids
// admin.api.llmtap*), so routes added later are checked without touching the tests.
func llmtapAdminRoutes(t *testing.T) []caddy.AdminRoute {
	t.Helper()
	var routes []caddy.AdminRoute
	for _, m := range caddy.GetModules("admin.api") {
		if !strings.HasPrefix(string(m.ID), "admin.api.llmtap") {
			continue
		}
		router, ok := m.New().(caddy.AdminRouter)
		if !ok {
			t.Fatalf("%s is not an admin router", m.ID)
		}
		routes = append(routes, router.Routes()...)
	}
	if len(routes) < 2 {
		t.Fatalf("found %d llmtap admin routes; the module registry lost them", len(routes))
	}
	return routes
}

// TestEveryAdminRouteIsGuarded sends requests to every llmtap admin route as a non-loopback
// client, and from loopback with a foreign Origin: the guard must refuse each with 403 before
// the route runs. From loopback with a loopback origin (or none) the route itself answers.
func TestEveryAdminRouteIsGuarded(t *testing.T) {
	refused := []struct {
		reason, remote, origin string
	}{
		{"a client on a private network", "10.1.2.3:40000", ""},
		{"a client on the internet", "203.0.113.9:5555", ""},
		{"an IPv6 client", "[2001:db8::1]:443", ""},
		{"an IPv4-mapped non-loopback client", "[::ffff:192.0.2.1]:80", ""},
		{"a remote address that is not an address", "somewhere:80", ""},
		{"a loopback client driven by a foreign page", "127.0.0.1:40000", "https://evil.example"},
		{"a loopback client driven by a sandboxed page", "127.0.0.1:40000", "null"},
		{"a foreign page pretending with a loopback-looking name", "127.0.0.1:40000", "http://127.0.0.1.evil.example"},
		{"a page with the loopback host on another scheme", "127.0.0.1:40000", "file://localhost"},
	}
	allowed := []struct {
		reason, remote, origin string
	}{
		{"a loopback client", "127.0.0.1:40000", ""},
		{"another loopback address", "127.0.0.2:40000", ""},
		{"an IPv6 loopback client", "[::1]:40000", ""},
		{"a unix socket", "@", ""},
		{"the dashboard's own page", "127.0.0.1:40000", "http://localhost:2019"},
		{"a page on 127.0.0.1", "[::1]:40000", "http://127.0.0.1:2019"},
	}
	for _, route := range llmtapAdminRoutes(t) {
		t.Run(route.Pattern, func(t *testing.T) {
			for _, c := range refused {
				if err := serveRoute(route, c.remote, c.origin); !refusedByGuard(err) {
					t.Errorf("%s (%s, Origin %q): got %v, want a 403 refusal", c.reason, c.remote, c.origin, err)
				}
			}
			for _, c := range allowed {
				if err := serveRoute(route, c.remote, c.origin); refusedByGuard(err) {
					t.Errorf("%s (%s, Origin %q) was refused: %v", c.reason, c.remote, c.origin, err)
				}
			}
		})
	}
}

// refusedByGuard reports whether err is the guard's 403.
func refusedByGuard(err error) bool {
	var apiErr caddy.APIError
	return errors.As(err, &apiErr) && apiErr.HTTPStatus == http.StatusForbidden && errors.Is(apiErr.Err, adminguard.ErrRefused)
}

// serveRoute sends GET route.Pattern to the route's handler as a client at remote with origin
// (none when empty), and returns the handler's error.
func serveRoute(route caddy.AdminRoute, remote, origin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // streams end
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://localhost:2019"+route.Pattern, nil)
	r.RemoteAddr = remote
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	return route.Handler.ServeHTTP(httptest.NewRecorder(), r)
}
