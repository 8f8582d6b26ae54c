package llmtap_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/mock"
)

// TestAdminRouteErrors sends every llmtap admin route a method it does not take and, where it
// reads a count (limit, slowest, since), a value it refuses, through real Caddy's admin
// listener: each answers with the status and the {"error": …} body it always has, and no
// Allow header (none was ever sent). A route added without a row here fails the test.
func TestAdminRouteErrors(t *testing.T) {
	up := startUpstream(t, mock.DefaultConfig())
	p, _ := loadProxy(t, "llmtap {\n\t\ttimeline {\n\t\t\twindow 1s\n\t\t}\n\t\tshadow s {\n\t\t\turl http://127.0.0.1:1/v1/chat/completions\n\t\t\tmodel shadow-m\n\t\t\trate 1\n\t\t\tstopped\n\t\t}\n\t}",
		site{body: "\tllmtap\n\treverse_proxy " + up.addr})
	cases := []struct {
		method, path, body string
		status             int
		err                string // the whole error message; "" for a success
		reason             string
	}{
		{"POST", "/llmtap/summary", "", 405, "method POST not allowed; use GET", "the summary is read-only"},
		{"GET", "/llmtap/summary", "", 200, "", "the right method passes"},
		{"DELETE", "/llmtap/requests", "", 405, "method DELETE not allowed; use GET", "the records are read-only"},
		{"GET", "/llmtap/requests?limit=x", "", 400, `limit must be a positive integer, got "x"`, "not a number"},
		{"GET", "/llmtap/requests?limit=0", "", 400, `limit must be a positive integer, got "0"`, "zero records is no request"},
		{"GET", "/llmtap/requests?limit=-3", "", 400, `limit must be a positive integer, got "-3"`, "negative"},
		{"GET", "/llmtap/requests?limit=1.5", "", 400, `limit must be a positive integer, got "1.5"`, "not an integer"},
		{"GET", "/llmtap/requests?slowest=0", "", 400, `slowest must be a positive integer, got "0"`, "slowest is a count too"},
		{"GET", "/llmtap/requests?limit=2&slowest=1", "", 200, "", "good counts pass"},
		{"GET", "/llmtap/requests?limit=", "", 200, "", "an empty limit means the default"},
		{"POST", "/llmtap/shadow", "", 405, "method POST not allowed; use GET", "the status is read-only"},
		{"GET", "/llmtap/shadow/s/start", "", 405, "method GET not allowed; use POST", "control takes POST"},
		{"GET", "/llmtap/shadow/s/stop", "", 405, "method GET not allowed; use POST", "control takes POST"},
		{"PUT", "/llmtap/shadow/s/rate", "{}", 405, "method PUT not allowed; use POST", "control takes POST"},
		{"POST", "/llmtap/shadow/s/headroom", "", 405, "method POST not allowed; use GET", "the report is read-only"},
		{"POST", "/llmtap/shadow/nope/start", "", 404, `no shadow load named "nope" is loaded`, "the name is checked before the method"},
		{"POST", "/llmtap/shadow/s", "", 404, "want /llmtap/shadow/<name>/start|stop|rate|headroom", "no action"},
		{"POST", "/llmtap/shadow/s/jump", "", 404, `unknown action "jump"; want start, stop, rate or headroom`, "unknown action"},
		{"POST", "/llmtap/shadow/s/rate", "x", 400, `want a JSON body {"rate": <requests per second>}`, "the rate body is JSON"},
		{"GET", "/llmtap/shadow/s/headroom", "", 404, `shadow load "s" is not a headroom probe`, "the right method reaches the load"},
		{"POST", "/llmtap/mirror", "", 405, "method POST not allowed; use GET", "the mirror summary is read-only"},
		{"PATCH", "/llmtap/mirror/pairs", "", 405, "method PATCH not allowed; use GET", "the pairs are read-only"},
		{"GET", "/llmtap/mirror/pairs?limit=abc", "", 400, `limit must be a positive integer, got "abc"`, "the same limit as the records"},
		{"GET", "/llmtap/mirror/pairs?limit=0", "", 400, `limit must be a positive integer, got "0"`, "the same limit as the records"},
		{"GET", "/llmtap/mirror/pairs?limit=3", "", 200, "", "a good limit passes"},
		{"POST", "/llmtap/ui/", "", 405, "method POST not allowed; use GET", "the page is read-only"},
		{"HEAD", "/llmtap/ui/", "", 200, "", "HEAD is allowed for the page"},
		{"GET", "/llmtap/ui/x", "", 404, "/llmtap/ui/x: the dashboard is the single page /llmtap/ui/", "one page"},
		{"POST", "/llmtap/timeline", "", 405, "method POST not allowed; use GET", "the timeline is read-only"},
		{"GET", "/llmtap/timeline?since=x", "", 400, `since must be a Unix time in milliseconds, got "x"`, "since is a time"},
		{"POST", "/llmtap/slo", "", 405, "method POST not allowed; use GET", "the SLO report is read-only"},
	}
	covered := make(map[string]bool)
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, p.admin+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %.300s, want %d (%s)", resp.StatusCode, b, tc.status, tc.reason)
			}
			if a := resp.Header.Values("Allow"); len(a) != 0 {
				t.Errorf("Allow: %q, want none (%s)", a, tc.reason)
			}
			if tc.err == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var doc struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(b, &doc); err != nil || doc.Error != tc.err {
				t.Errorf("body %.300s (%v), want {\"error\": %q} (%s)", b, err, tc.err, tc.reason)
			}
		})
		if tc.status == http.StatusMethodNotAllowed {
			path, _, _ := strings.Cut(tc.path, "?")
			covered[path] = true
		}
	}
	mi, err := caddy.GetModule("admin.api.llmtap")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mi.New().(caddy.AdminRouter).Routes() {
		ok := covered[r.Pattern]
		for path := range covered {
			ok = ok || (strings.HasSuffix(r.Pattern, "/") && strings.HasPrefix(path, r.Pattern))
		}
		if !ok {
			t.Errorf("admin route %s has no wrong-method row", r.Pattern)
		}
	}
}
