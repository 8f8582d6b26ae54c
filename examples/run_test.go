package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/telemetry/record"
)

// loopbackConfig rewrites an adapted example for a test: its one site listens on listen (a
// loopback address) instead of the example's port, the admin API on admin, Caddy's storage in
// dir, nothing is autosaved and only errors are logged. Everything else is the example's.
func loopbackConfig(t *testing.T, cfgJSON []byte, listen, admin, dir string) []byte {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatal(err)
	}
	servers, _ := dig(cfg, "apps", "http", "servers").(map[string]any)
	if len(servers) != 1 {
		t.Fatalf("want one server in the example, got %d", len(servers))
	}
	for _, s := range servers {
		s.(map[string]any)["listen"] = []any{listen}
	}
	cfg["admin"] = map[string]any{"listen": admin, "config": map[string]any{"persist": false}}
	cfg["storage"] = map[string]any{"module": "file_system", "root": dir}
	cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVLLMExampleServesAndMeasures loads vllm.Caddyfile, pointed at the mock inference server
// through its VLLM_UPSTREAM variable, sends one streaming chat completion through it and
// finds the request's record on the admin API.
func TestVLLMExampleServesAndMeasures(t *testing.T) {
	offlineEnv(t)
	t.Setenv("VLLM_UPSTREAM", startMock(t))

	body, err := os.ReadFile("vllm.Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	listen, admin := testkit.FreeAddr(t), testkit.FreeAddr(t)
	testkit.Start(t, loopbackConfig(t, adapt(t, "vllm.Caddyfile", body), listen, admin, t.TempDir()))
	t.Cleanup(func() {
		if err := testkit.Shutdown(); err != nil {
			t.Error(err)
		}
	})

	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	const id = "examples-vllm-1"
	reqBody := `{"model":"mock-model","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+listen+"/v1/chat/completions", strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("data: [DONE]")) {
		t.Fatalf("response %s, want 200 and a complete stream:\n%s", resp.Status, got)
	}
	// inject_usage asked the server for a usage chunk the client did not ask for; it must not
	// reach the client.
	if bytes.Contains(got, []byte(`"completion_tokens"`)) {
		t.Errorf("the client received the injected usage chunk:\n%s", got)
	}

	rec := waitRecord(t, client, "http://"+admin, id)
	if !rec.Stream || rec.Status != http.StatusOK || rec.Error != "" {
		t.Errorf("record: stream %v, status %d, error %q; want a successful stream", rec.Stream, rec.Status, rec.Error)
	}
	if rec.TTFTMs == nil {
		t.Error("record has no time to first token")
	}
	if rec.OutputTokens != 8 || rec.OutputTokensSource != "usage" {
		t.Errorf("record: %d output tokens from %q, want 8 from usage (inject_usage is on)", rec.OutputTokens, rec.OutputTokensSource)
	}
}

// waitRecord polls GET /llmtap/requests (bounded: the record is written after the client may
// already have its last byte) until the record of request id appears.
func waitRecord(t *testing.T, c *http.Client, admin, id string) record.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(admin + "/llmtap/requests?limit=100")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /llmtap/requests: %v %s: %s", err, resp.Status, b)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r record.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("decoding a record: %v: %s", err, sc.Bytes())
			}
			if r.RequestID == id {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no record of request %s on the admin API after 5 s", id)
	return record.Record{}
}
