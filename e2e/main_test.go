// Package e2e holds llmtap's end-to-end tests against a real inference server: Ollama v0.6.5
// serving the tiny stories260K model on loopback, started by bench/ollama.sh, with real Caddy
// and llmtap loaded in-process in front of it, and real client SDKs (Go and npm) talking to
// llmtap. The Anthropic SDK test uses the mock server's Messages mode.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive
	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/internal/tee"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// model is the name bench/ollama.sh gives stories260K.gguf.
const model = "stories260k"

// env is what TestMain starts once for every test: Caddy's config is process-wide.
var env struct {
	ollama string // http://host:port, direct
	admin  string // Caddy's admin API
	// plain and inject are llmtap sites in front of Ollama, without and with inject_usage;
	// anthropic is an llmtap site in front of the mock's Messages mode.
	plain, inject, anthropic string
	ollamaTee, mockTee       *tee.Tee
	mock                     *mock.Server
	// config is the loaded Caddy config (JSON), for a test that loads its own to restore.
	config []byte
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "llmtap-ollama-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	host, err := startOllama(dir)
	defer stopOllama(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start Ollama v0.6.5 with bench/ollama.sh: %v\n"+
			"e2e: `make tools` installs it (go install github.com/ollama/ollama@v0.6.5; needs gcc and g++)\n", err)
		return 1
	}
	env.ollama = "http://" + host

	stopServers, err := startServers(dir, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	stopServers()
	return code
}

// startOllama runs bench/ollama.sh start (bounded) and returns the host:port it serves on.
func startOllama(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a first build
	defer cancel()
	cmd := exec.CommandContext(ctx, "../bench/ollama.sh", "start", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for line := range strings.Lines(string(out)) {
		if h, ok := strings.CutPrefix(strings.TrimSpace(line), "OLLAMA_HOST="); ok {
			return h, nil
		}
	}
	return "", fmt.Errorf("bench/ollama.sh printed no OLLAMA_HOST: %q", out)
}

func stopOllama(dir string) {
	cmd := exec.Command("../bench/ollama.sh", "stop", dir)
	cmd.Stderr = os.Stderr
	_ = cmd.Run()
}

// startServers starts the tees, the mock and Caddy, and returns what stops them.
func startServers(dir, ollamaHost string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	target, _ := url.Parse("http://" + ollamaHost)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	env.ollamaTee = tee.New(bufferBody(rp))
	ollamaTeeAddr, s, err := serve(env.ollamaTee)
	if err != nil {
		return stop, err
	}
	stops = append(stops, s)

	env.mock, err = mock.New(mock.Config{
		Model: "claude-mock", TTFT: 5 * time.Millisecond, ITL: time.Millisecond,
		OutputTokens: 32, LogEvents: true, Seed: 11, PromptCounter: mock.PromptApprox,
	})
	if err != nil {
		return stop, err
	}
	env.mockTee = tee.New(env.mock)
	mockAddr, s, err := serve(env.mockTee)
	if err != nil {
		return stop, err
	}
	stops = append(stops, s)

	addrs := make([]string, 4)
	for i := range addrs {
		if addrs[i], err = loopback.FreeAddr(); err != nil {
			return stop, err
		}
	}
	cf := fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %s
	log {
		level ERROR
	}
}
http://%s {
	llmtap
	reverse_proxy %s
}
http://%s {
	llmtap {
		inject_usage
	}
	reverse_proxy %s
}
http://%s {
	llmtap
	reverse_proxy %s
}
`, addrs[0], dir, addrs[1], ollamaTeeAddr, addrs[2], ollamaTeeAddr, addrs[3], mockAddr)
	cfgJSON, err := testkit.AdaptCaddyfile("e2e", cf)
	if err != nil {
		return stop, err
	}
	if err := testkit.LoadConfig(cfgJSON); err != nil {
		return stop, err
	}
	// Shutdown disables the admin endpoint: that stops the admin server caddy.Stop leaves running.
	stops = append(stops, func() { _ = testkit.Shutdown() })
	env.admin = "http://" + addrs[0]
	env.config = cfgJSON
	env.plain, env.inject, env.anthropic = "http://"+addrs[1], "http://"+addrs[2], "http://"+addrs[3]
	return stop, nil
}

// bufferBody reads each request's body in full before next handles it. Go's HTTP/1 server
// drains and closes a request body when the handler starts its response, and a Transport
// that has sent the declared length still reads the body once more to check for extra
// bytes: when Ollama answered before that read, it failed ("invalid Read on closed Body")
// and the Transport closed its connection, cutting httputil.ReverseProxy's stream
// mid-body (golang/go#40747). Seen here about once in 40 streams under -race on a loaded
// machine once Ollama ran with one thread and answered in ~5 ms.
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		next.ServeHTTP(w, r)
	})
}

// serve serves h on a loopback port and returns its address and what stops it.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		_ = srv.Close()
		<-done
	}, nil
}

// upstreamBody returns what an upstream behind tp sent for request id (failing tb when it
// saw no such request within 5 s).
func upstreamBody(tb testing.TB, tp *tee.Tee, id string) []byte {
	tb.Helper()
	b, ok := tp.Wait(id, 5*time.Second)
	if !ok {
		tb.Fatalf("the upstream saw no request %q", id)
	}
	return b
}

// client does not ask for compression, so bodies are the bytes the server sent.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 60 * time.Second}

// post sends a JSON body with request id id (none when empty) and returns the whole body.
func post(tb testing.TB, url, id string, body []byte) []byte {
	tb.Helper()
	resp, b, err := testkit.PostJSON(context.Background(), client, url, id, body)
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	return b
}

// recordOf waits for llmtap to finish measuring and returns the record of request id.
func recordOf(tb testing.TB, id string) record.Record {
	tb.Helper()
	app, err := caddy.ActiveContext().AppIfConfigured("llmtap") // the app the handler reaches
	if err != nil {
		tb.Fatalf("no llmtap engine is running: %v", err)
	}
	tp := app.(*llmtap.App).Process().Tap()
	for deadline := time.Now().Add(10 * time.Second); tp.InFlight() != 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d requests still being measured after 10 s", tp.InFlight())
		}
	}
	tp.Flush()
	resp, err := http.Get(env.admin + "/llmtap/requests?limit=1000")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatalf("decoding a record: %v", err)
		}
		if r.RequestID == id {
			return r
		}
	}
	tb.Fatalf("no record for request %q (%v)", id, sc.Err())
	return record.Record{}
}
