package examples

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// startMock starts a mock inference server for an example test and returns its host:port.
func startMock(t *testing.T) string {
	t.Helper()
	_, upURL := testkit.StartMock(t, mock.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond, OutputTokens: 8, RoleChunk: true})
	return strings.TrimPrefix(upURL, "http://")
}

// TestExamplesServeAndMeasure loads each example that needs only an OpenAI-compatible server,
// pointed at the mock through its environment variables, sends streaming chat completions
// through it and finds their records on the admin API. (vllm.Caddyfile has its own test;
// shadow.Caddyfile's loads target the example's own port, and its features are tested end to
// end in modules/llmtap; openai-cloud needs TLS to a cloud host.)
func TestExamplesServeAndMeasure(t *testing.T) {
	offlineEnv(t)
	cases := []struct {
		file string
		env  func(t *testing.T, up string) map[string]string
		n    int                                       // requests to send
		post func(t *testing.T, env map[string]string) // checks after Caddy stopped
	}{
		{file: "sglang.Caddyfile", n: 1, env: func(t *testing.T, up string) map[string]string {
			return map[string]string{"SGLANG_UPSTREAM": up}
		}},
		{file: "tgi.Caddyfile", n: 1, env: func(t *testing.T, up string) map[string]string {
			return map[string]string{"TGI_UPSTREAM": up}
		}},
		{file: "ollama.Caddyfile", n: 1, env: func(t *testing.T, up string) map[string]string {
			return map[string]string{"OLLAMA_UPSTREAM": up}
		}},
		{file: "mirror.Caddyfile", n: 20, env: func(t *testing.T, up string) map[string]string {
			return map[string]string{"UPSTREAM": up, "MIRROR_UPSTREAM": "http://" + startMock(t)}
		}},
		{file: "recording.Caddyfile", n: 16, env: func(t *testing.T, up string) map[string]string {
			return map[string]string{"UPSTREAM": up, "LLMTAP_RECORD_DIR": filepath.Join(t.TempDir(), "rec")}
		}, post: func(t *testing.T, env map[string]string) {
			files, err := filepath.Glob(filepath.Join(env["LLMTAP_RECORD_DIR"], "records-*.jsonl"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no records file in %s (err %v)", env["LLMTAP_RECORD_DIR"], err)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(b, []byte("\n")); n == 0 || n > 16 {
				t.Errorf("%d recorded lines for 16 requests sampled at 25%%", n)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			env := tc.env(t, startMock(t))
			for k, v := range env {
				t.Setenv(k, v)
			}
			body, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			listen, admin := testkit.FreeAddr(t), testkit.FreeAddr(t)
			testkit.Start(t, loopbackConfig(t, adapt(t, tc.file, body), listen, admin, t.TempDir()))
			stopped := false
			stopCaddy := func() {
				if stopped {
					return
				}
				stopped = true
				if err := testkit.Shutdown(); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(stopCaddy)
			tr := &http.Transport{DisableCompression: true}
			t.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			var last string
			for i := range tc.n {
				last = "examples-" + strings.TrimSuffix(tc.file, ".Caddyfile") + "-" + string(rune('a'+i))
				req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+listen+"/v1/chat/completions",
					strings.NewReader(`{"model":"mock-model","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-Id", last)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("data: [DONE]")) {
					t.Fatalf("response %s (err %v), want 200 and a complete stream:\n%s", resp.Status, err, got)
				}
			}
			rec := waitRecord(t, client, "http://"+admin, last)
			if !rec.Stream || rec.Status != http.StatusOK || rec.Error != "" || rec.TTFTMs == nil || rec.OutputTokens != 8 {
				t.Errorf("record: stream %v, status %d, error %q, ttft %v, %d output tokens; want a measured 8-token stream",
					rec.Stream, rec.Status, rec.Error, rec.TTFTMs, rec.OutputTokens)
			}
			if tc.post != nil {
				stopCaddy()
				tc.post(t, env)
			}
		})
	}
}
