// Package mocktest starts the mock inference server for tests, with no other dependency, so
// engine-package tests use it without pulling Caddy in (internal/testkit builds on it).
package mocktest

import (
	"testing"

	"github.com/llmtap/llmtap/mock"
)

// Start serves a mock inference server with cfg on a free loopback port until the test
// ends, and returns it with its URL ("http://127.0.0.1:port"). At the end it stops the server
// (a failure to stop is logged, not failed: a connection Caddy left mid-request may be reset)
// and closes the mock's event log.
func Start(t testing.TB, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	mock, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := mock.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Logf("stopping the mock: %v", err)
		}
		if err := mock.Close(); err != nil {
			t.Errorf("closing the mock: %v", err)
		}
	})
	return mock, url
}
