package testkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"github.com/llmtap/llmtap/mock"
)

// TestCaddyStartsServesAndShutsDown starts Caddy from a Caddyfile, reads a site and the admin
// API through Get, and checks that Shutdown stops both listeners.
func TestCaddyStartsServesAndShutsDown(t *testing.T) {
	admin, site := FreeAddr(t), FreeAddr(t)
	cf := fmt.Sprintf("{\n\tadmin %s\n\tdefault_bind 127.0.0.1\n\tauto_https off\n\tpersist_config off\n\tstorage file_system %s\n\tlog {\n\t\tlevel ERROR\n\t}\n}\nhttp://%s {\n\trespond \"hello\"\n}\n",
		admin, t.TempDir(), site)
	cfgJSON := StartCaddyfile(t, "testkit", cf)
	if !strings.Contains(string(cfgJSON), site) {
		t.Errorf("the adapted config does not listen on %s: %s", site, cfgJSON)
	}
	if got := string(Get(t, "http://"+site+"/")); got != "hello" {
		t.Errorf("the site answered %q, want hello", got)
	}
	if got := Get(t, "http://"+admin+"/config/"); !strings.Contains(string(got), `"body":"hello"`) {
		t.Errorf("the admin API's config does not hold the site: %s", got)
	}
	if err := Shutdown(); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if resp, err := c.Get("http://" + site + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("the site still answers after Shutdown: %s", resp.Status)
	}
	// The admin server stops in a goroutine of Caddy's: wait (bounded) for it to go.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := c.Get("http://" + admin + "/config/")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the admin API still answers 10 s after Shutdown")
		}
	}
}

// TestWaitReadyGivesUp: an address nothing listens on is an error after the timeout, not a
// hang.
func TestWaitReadyGivesUp(t *testing.T) {
	t.Parallel()
	if err := waitReady(context.Background(), "http://"+FreeAddr(t)+"/", 50*time.Millisecond); err == nil {
		t.Error("waitReady returned nil for an address nothing listens on")
	}
}

// TestPostJSONToTheMock sends a chat completion to the mock with PostJSON: the request carries
// the JSON content type and the request id, and the mock answers it in full.
func TestPostJSONToTheMock(t *testing.T) {
	t.Parallel()
	_, url := StartMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, OutputTokens: 3})
	var got http.Header
	echo := Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = io.Copy(w, r.Body)
	}))
	body := []byte(`{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	resp, b, err := PostJSON(t.Context(), http.DefaultClient, "http://"+echo+"/", "id-1", body)
	if err != nil || resp.StatusCode != http.StatusOK || string(b) != string(body) {
		t.Fatalf("echo: %v %v %q", resp, err, b)
	}
	if got.Get("Content-Type") != "application/json" || got.Get("X-Request-Id") != "id-1" {
		t.Errorf("headers sent: %v", got)
	}
	resp, b, err = PostJSON(t.Context(), http.DefaultClient, url+"/v1/chat/completions", "", body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"completion_tokens":3`) {
		t.Fatalf("the mock at %s: %v %v %s", url, resp, err, b)
	}
}
