package api_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmtap/llmtap/api"
)

// TestAdminHelpers: the method check and the count parameter every JSON admin route uses
// answer with one status and one wording (TestAdminRouteErrors in modules/llmtap checks them
// through Caddy's admin listener, route by route).
func TestAdminHelpers(t *testing.T) {
	for _, tc := range []struct {
		method, query string
		also          []string
		n             int
		status        int
		msg           string
		reason        string
	}{
		{"GET", "", nil, 100, 0, "", "absent: the default"},
		{"GET", "?limit=", nil, 100, 0, "", "empty: the default"},
		{"GET", "?limit=7", nil, 7, 0, "", "a positive count"},
		{"GET", "?limit=0", nil, 0, 400, `limit must be a positive integer, got "0"`, "zero is not a count"},
		{"GET", "?limit=-1", nil, 0, 400, `limit must be a positive integer, got "-1"`, "negative"},
		{"GET", "?limit=1e3", nil, 0, 400, `limit must be a positive integer, got "1e3"`, "not an integer"},
		{"GET", "?limit=99999999999999999999", nil, 0, 400, `limit must be a positive integer, got "99999999999999999999"`, "overflows int"},
		{"POST", "", nil, 0, 405, "method POST not allowed; use GET", "the method is checked first"},
		{"HEAD", "", []string{"HEAD"}, 100, 0, "", "an also-allowed method"},
		{"DELETE", "", []string{"HEAD"}, 0, 405, "method DELETE not allowed; use GET", "the message names the main method"},
	} {
		r := httptest.NewRequest(tc.method, "/x"+tc.query, nil)
		err := api.AllowMethod(r, http.MethodGet, tc.also...)
		n := 0
		if err == nil {
			n, err = api.CountParam(r, "limit", 100)
		}
		var he *api.HTTPError
		switch {
		case tc.status == 0 && (err != nil || n != tc.n):
			t.Errorf("%s %s: %d, %v; want %d (%s)", tc.method, tc.query, n, err, tc.n, tc.reason)
		case tc.status != 0 && (!errors.As(err, &he) || he.Status != tc.status || err.Error() != tc.msg):
			t.Errorf("%s %s: %v; want %d %q (%s)", tc.method, tc.query, err, tc.status, tc.msg, tc.reason)
		}
	}
}
