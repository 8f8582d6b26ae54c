package adminguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const env = "LLMTAP_ADMIN_ALLOW"

// TestPolicy checks a policy's parsing and what each form allows.
func TestPolicy(t *testing.T) {
	p := Parse("10.0.0.0/8, https://grafana.example:3000 192.0.2.7/32", env)
	if p.err != nil {
		t.Fatal(p.err)
	}
	for _, c := range []struct {
		reason, remote, origin string
		ok                     bool
	}{
		{"a client in an allowed network", "10.9.8.7:1", "", true},
		{"an allowed single address", "192.0.2.7:1", "", true},
		{"its neighbour", "192.0.2.8:1", "", false},
		{"an allowed origin", "127.0.0.1:1", "https://grafana.example:3000", true},
		{"the same host on another port", "127.0.0.1:1", "https://grafana.example:3001", false},
		{"the same host over http", "127.0.0.1:1", "http://grafana.example:3000", false},
		{"an allowed origin from a client outside the networks", "203.0.113.1:1", "https://grafana.example:3000", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/llmtap/summary", nil)
		r.RemoteAddr = c.remote
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if err := p.Check(r); (err == nil) != c.ok {
			t.Errorf("%s: check = %v, want allowed %v", c.reason, err, c.ok)
		}
	}

	r := httptest.NewRequest(http.MethodGet, "/llmtap/summary", nil)
	r.RemoteAddr = "203.0.113.1:1"
	r.Header.Set("Origin", "https://anything.example")
	if err := Parse("*", env).Check(r); err != nil {
		t.Errorf("* refused a request: %v", err)
	}

	bad := Parse("10.0.0.0/8, intranet, https://a.example/path", env)
	if bad.err == nil || !strings.Contains(bad.err.Error(), `"intranet" is not a network prefix`) || !strings.Contains(bad.err.Error(), `"https://a.example/path" is not an origin`) {
		t.Fatalf("invalid value: err = %v, want both bad items named", bad.err)
	}
	r = httptest.NewRequest(http.MethodGet, "/llmtap/summary", nil)
	r.RemoteAddr = "10.0.0.1:1"
	if err := bad.Check(r); err == nil || !strings.Contains(err.Error(), env+" is ignored") {
		t.Errorf("an invalid value must allow nothing beyond loopback and say why; got %v", err)
	}
}

// TestRefusalsWrapErrRefused: both checks refuse with an error the host can tell apart.
func TestRefusalsWrapErrRefused(t *testing.T) {
	p := Parse("", env)
	r := httptest.NewRequest(http.MethodGet, "/llmtap/summary", nil)
	r.RemoteAddr = "203.0.113.1:1"
	if err := p.Check(r); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "203.0.113.1:1 is not on a loopback address") {
		t.Errorf("Check: %v, want a refusal naming the client", err)
	}
	r = httptest.NewRequest(http.MethodGet, "/llmtap/ui/", nil)
	r.Host = "evil.example:2020"
	if err := p.CheckBrowser(r); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "unless "+env+" allows more") {
		t.Errorf("CheckBrowser: %v, want a refusal naming %s", err, env)
	}
	r.Host = "[::1]:2020"
	if err := p.CheckBrowser(r); err != nil {
		t.Errorf("CheckBrowser refused a loopback Host: %v", err)
	}
}
