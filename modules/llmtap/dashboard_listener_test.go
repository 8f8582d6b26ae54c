package llmtap_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// TestDashboardListener loads the README's basic config (a site with llmtap and
// reverse_proxy, no admin origins) and makes the requests a browser makes for a typed URL:
// Caddy's admin listener refuses them, the dashboard listener serves the page, the routes it
// reads and refuses what a browser must not get (another Host, another site). The listener
// stops with the last config using the handler. (e2e/browser opens it in Chromium.)
func TestDashboardListener(t *testing.T) {
	dash := testkit.FreeAddr(t)
	t.Setenv(llmtap.DashboardEnv, dash)
	up := startUpstream(t, mock.DefaultConfig())
	p, _ := loadProxy(t, "", site{body: "\tllmtap\n\treverse_proxy " + up.addr})
	if got := llmtap.DashboardAddr(); got != dash {
		t.Fatalf("dashboard listener on %q, want %q", got, dash)
	}
	typed := map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document"}
	fromPage := map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin", "Referer": "http://" + dash + "/llmtap/ui/"}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name, url, host string
		header          map[string]string
		status          int
		body            string
		reason          string
	}{
		{"admin listener refuses a typed URL", p.admin + "/llmtap/ui/", "", typed, http.StatusForbidden, "origin ''",
			"Caddy's origin check: why the dashboard needs a listener of its own"},
		{"root redirects to the page", "http://" + dash + "/", "", typed, http.StatusTemporaryRedirect, "",
			"the address the log names opens the dashboard"},
		{"the page", "http://" + dash + "/llmtap/ui/", "", typed, http.StatusOK, "<html",
			"a typed URL needs no Origin here"},
		{"the page by localhost", "http://" + dash + "/llmtap/ui/", "localhost:" + strings.Split(dash, ":")[1], typed, http.StatusOK, "<html",
			"localhost is a loopback name"},
		{"summary from the page", "http://" + dash + "/llmtap/summary", "", fromPage, http.StatusOK, `"summary"`,
			"the page's scripts read the routes of their own origin"},
		{"requests from the page", "http://" + dash + "/llmtap/requests?limit=5", "", fromPage, http.StatusOK, "",
			"the slowest-requests table"},
		{"bad query", "http://" + dash + "/llmtap/requests?limit=x", "", fromPage, http.StatusBadRequest, `{"error":"limit must be`,
			"errors are written as on the admin listener"},
		{"rebound host", "http://" + dash + "/llmtap/summary", "evil.example:80", fromPage, http.StatusForbidden, "not a loopback host",
			"a page of a DNS name rebound to loopback names itself in Host"},
		{"another site", "http://" + dash + "/llmtap/summary", "", map[string]string{"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "another site",
			"a no-cors request of another site carries no Origin"},
		{"another origin", "http://" + dash + "/llmtap/summary", "", map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, http.StatusForbidden, "",
			"the guard of every llmtap route"},
	} {
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s (%s): %d %.200s, want %d containing %q", tc.name, tc.reason, resp.StatusCode, b, tc.status, tc.body)
		}
		if tc.status == http.StatusTemporaryRedirect && resp.Header.Get("Location") != "/llmtap/ui/" {
			t.Errorf("%s: Location %q", tc.name, resp.Header.Get("Location"))
		}
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := llmtap.DashboardAddr(); got != "" {
		t.Errorf("dashboard listener still on %q after the last config stopped", got)
	}
	if resp, err := http.Get("http://" + dash + "/"); !errors.Is(err, syscall.ECONNREFUSED) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("dashboard listener after stop: %v, want connection refused", err)
	}
}
