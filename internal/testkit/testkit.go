// Package testkit is the set-up the end-to-end tests share: a free loopback address, the mock
// inference server (or any handler) served on loopback, Caddy started in-process from a
// Caddyfile or JSON config and stopped when the test ends, and the few HTTP calls the tests make
// against its admin API and sites. It holds set-up only: every assertion stays in the tests.
//
// Caddy keeps one running config per process, so the tests of a package that start Caddy run
// one at a time (none of them calls t.Parallel).
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // registers the caddyfile adapter

	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/internal/mocktest"
	"github.com/llmtap/llmtap/mock"
)

// shutdownConfig replaces a loaded config with one that disables the admin endpoint (stopping
// the admin server that caddy.Stop leaves running between configs), saves nothing and logs only
// errors.
const shutdownConfig = `{"admin":{"disabled":true,"config":{"persist":false}},"logging":{"logs":{"default":{"level":"ERROR"}}}}`

// readyTimeout bounds the wait for a freshly loaded admin endpoint to answer.
const readyTimeout = 10 * time.Second

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port was free a moment ago and
// that no other FreeAddr call hands out (see loopback.FreeAddr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// StartMock serves a mock inference server with cfg on a free loopback port until the test
// ends (mocktest.Start, which engine-package tests use without Caddy).
func StartMock(t testing.TB, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	return mocktest.Start(t, cfg)
}

// Serve serves h on a free loopback port until the test ends and returns its host:port. At the
// end it cancels the requests in flight (their contexts end), closes the server and waits for
// it. Registered before Start, it is stopped after Caddy.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base, cancel := context.WithCancel(context.Background())
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { cancel(); _ = hs.Close(); <-done })
	return ln.Addr().String()
}

// Adapt turns Caddyfile text into Caddy's JSON config; name is the file name its errors and
// warnings cite.
func Adapt(t testing.TB, name, caddyfile string) []byte {
	t.Helper()
	cfgJSON, err := AdaptCaddyfile(name, caddyfile)
	if err != nil {
		t.Fatalf("%v\n%s", err, caddyfile)
	}
	return cfgJSON
}

// AdaptCaddyfile is Adapt for set-up that has no test (a TestMain).
func AdaptCaddyfile(name, caddyfile string) ([]byte, error) {
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": name})
	if err != nil {
		return nil, fmt.Errorf("adapting the Caddyfile %s: %w", name, err)
	}
	return cfgJSON, nil
}

// Load loads cfgJSON into the process's Caddy, replacing the running config: a reload, as a
// test does mid-way. It neither waits for the admin endpoint nor registers anything to stop
// Caddy (Start does both).
func Load(t testing.TB, cfgJSON []byte) {
	t.Helper()
	if err := caddy.Load(cfgJSON, true); err != nil {
		t.Fatalf("loading the Caddy config: %v", err)
	}
}

// Start loads cfgJSON like LoadConfig and stops Caddy when the test ends.
func Start(t testing.TB, cfgJSON []byte) {
	t.Helper()
	if err := LoadConfig(cfgJSON); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
}

// StartCaddyfile adapts caddyfile (named name) and starts Caddy with it like Start; it returns
// the JSON config, for a test that reloads it.
func StartCaddyfile(t testing.TB, name, caddyfile string) []byte {
	t.Helper()
	cfgJSON := Adapt(t, name, caddyfile)
	Start(t, cfgJSON)
	return cfgJSON
}

// LoadConfig loads cfgJSON into the process's Caddy and waits until its admin endpoint, when
// the config has one of its own, answers. It is the start of Start for set-up that has no test
// (a TestMain, a cleanup that reports errors without failing).
func LoadConfig(cfgJSON []byte) error {
	if err := caddy.Load(cfgJSON, true); err != nil {
		return fmt.Errorf("loading the Caddy config: %w", err)
	}
	return waitAdmin(cfgJSON)
}

// Shutdown stops Caddy and the admin server it keeps between configs (by loading
// shutdownConfig first); the admin server stops in a goroutine of Caddy's, shortly after.
func Shutdown() error {
	err := caddy.Load([]byte(shutdownConfig), true)
	_ = caddy.Stop()
	if err != nil {
		return fmt.Errorf("stopping the admin server: %w", err)
	}
	return nil
}

// waitAdmin waits (bounded) until the admin endpoint of cfgJSON, when it has one on a TCP
// address, answers an HTTP request (any status: a running server is all it asks).
func waitAdmin(cfgJSON []byte) error {
	var cfg struct {
		Admin *struct {
			Disabled bool   `json:"disabled"`
			Listen   string `json:"listen"`
		} `json:"admin"`
	}
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return fmt.Errorf("reading the admin address of the config: %w", err)
	}
	if cfg.Admin == nil || cfg.Admin.Disabled || cfg.Admin.Listen == "" || strings.Contains(cfg.Admin.Listen, "/") {
		return nil // the default address, none, or a unix socket: nothing of the test's own
	}
	return waitReady(context.Background(), "http://"+strings.TrimPrefix(cfg.Admin.Listen, "tcp/")+"/config/", readyTimeout)
}

// waitReady waits until url answers an HTTP GET with any status, or fails after timeout (or
// when ctx ends) with the last error.
func waitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within %v: %w", url, timeout, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Get fetches url and returns its body, failing the test on any error or a status other than
// 200.
func Get(t testing.TB, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b
}

// GetJSON decodes the JSON body of Get(url) into v.
func GetJSON(t testing.TB, url string, v any) {
	t.Helper()
	if err := json.Unmarshal(Get(t, url), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// NewPost is a JSON POST of body to url, with X-Request-Id id when id is not empty.
func NewPost(ctx context.Context, url, id string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	return req, nil
}

// PostJSON sends NewPost(ctx, url, id, body) with c and returns the response with its body read
// in full (and closed).
func PostJSON(ctx context.Context, c *http.Client, url, id string, body []byte) (*http.Response, []byte, error) {
	req, err := NewPost(ctx, url, id, body)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}
