package commands

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// runTopArgs runs `llmtap top` in-process and returns its exit code and output.
func runTopArgs(t *testing.T, ctx context.Context, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	code, err := topMain(ctx, &out, fs, args, false)
	if err != nil {
		t.Logf("top: %v\n%s", err, errOut.String())
	}
	return code, out.String()
}

// topFields returns the columns of the row of model and class in a frame.
func topFields(frame, model, class string) []string {
	for line := range strings.Lines(frame) {
		f := strings.Fields(line)
		if len(f) >= 10 && f[0] == model && f[1] == class {
			return f
		}
	}
	return nil
}

// parseMs reads a latency column ("12.3ms", "1.2s").
func parseMs(t *testing.T, s string) float64 {
	t.Helper()
	if v, ok := strings.CutSuffix(s, "ms"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil {
			return f
		}
	}
	if v, ok := strings.CutSuffix(s, "s"); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f * 1000
		}
	}
	t.Fatalf("%q is not a latency", s)
	return 0
}

// topCaddyfile is llmtap in front of the mock with the app's timeline and the API on the site
// as well (h2c, for gRPC).
const topCaddyfile = `{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	log {
		level ERROR
	}
	servers {
		protocols h1 h2 h2c
	}
	llmtap {
		gpu off
	}
}

http://%s {
	llmtap_api
	llmtap {
		tenant header X-Tenant
	}
	reverse_proxy %s
}
`

// startTopCaddy loads Caddy with llmtap in front of a mock (TTFT ttft) and sends requests for
// top-model until the test ends; it returns the admin and site addresses and the config.
func startTopCaddy(t *testing.T, ttft time.Duration) (admin, site string, cfgJSON []byte) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = ttft, time.Millisecond
	_, mockURL := testkit.StartMock(t, cfg)
	admin, site = testkit.FreeAddr(t), testkit.FreeAddr(t)
	cf := fmt.Sprintf(topCaddyfile, admin, site, strings.TrimPrefix(mockURL, "http://"))
	cfgJSON = testkit.StartCaddyfile(t, "top", cf)
	ctx, cancel := context.WithCancel(context.Background())
	var load sync.WaitGroup
	t.Cleanup(func() { // runs before StartCaddyfile's: the load ends before Caddy stops
		cancel()
		load.Wait()
	})
	load.Go(func() {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		body := `{"model":"top-model","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+site+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("X-Tenant", "team-top")
			if resp, err := c.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	return admin, site, cfgJSON
}

// TestTopOnce runs `llmtap top --once` against Caddy with llmtap in-process while traffic
// flows to the mock: over the admin listener (Connect) and the site (gRPC over h2c), the
// frame shows the model with a positive rate and a TTFT at least the mock's.
func TestTopOnce(t *testing.T) {
	const ttft = 15 * time.Millisecond
	admin, site, _ := startTopCaddy(t, ttft)
	ctx := t.Context()
	for _, tc := range []struct{ name, addr, protocol string }{
		{"admin/connect", admin, "connect"},
		{"site/grpc", site, "grpc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runTopArgs(t, ctx, "--admin", tc.addr, "--once", "--protocol", tc.protocol, "--model", "top-model")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			row := topFields(out, "top-model", "live")
			if row == nil {
				t.Fatalf("no top-model/live row:\n%s", out)
			}
			rate, err := strconv.ParseFloat(row[2], 64)
			if err != nil || rate <= 0 || rate > 1000 {
				t.Errorf("rate %q: want a positive request rate below 1000/s\n%s", row[2], out)
			}
			// A window closes before the requests that began in it have all ended, so its
			// TTFT may be missing ("-"); when present it is at least the mock's.
			if row[3] != "-" {
				if p50 := parseMs(t, row[3]); p50 < float64(ttft.Milliseconds()) || p50 > 10_000 {
					t.Errorf("TTFT p50 %v ms: want at least the mock's %v, under 10 s\n%s", p50, ttft, out)
				}
			}
			t.Logf("frame:\n%s", out)
			if !strings.Contains(out, "from timeline") {
				t.Errorf("the frame does not say its windows come from the timeline:\n%s", out)
			}
			// The admin listener serves /llmtap/summary: the frame lists the tenant's usage.
			if tc.protocol == "connect" && !regexp.MustCompile(`(?m)^team-top\s+[1-9]\d*\s`).MatchString(out) {
				t.Errorf("the frame has no tenant row for team-top with its requests:\n%s", out)
			}
		})
	}
	code, out := runTopArgs(t, ctx, "--admin", "127.0.0.1:1", "--once", "--timeout", "1s")
	if code == 0 {
		t.Errorf("top --once against a closed port exited 0:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTopReconnects runs `llmtap top --plain` across a config reload, which replaces the
// admin server and ends its stream: top says so, reconnects and goes on printing frames.
func TestTopReconnects(t *testing.T) {
	admin, _, cfgJSON := startTopCaddy(t, time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		fs := flag.NewFlagSet("top", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		code, _ := topMain(ctx, out, fs, []string{"--admin", admin, "--plain"}, false)
		done <- code
	}()
	frames := func() int { return strings.Count(out.String(), "llmtap top  http") }
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; output:\n%s", what, out.String())
			}
		}
	}
	wait("a first frame", func() bool { return frames() >= 1 })
	testkit.Load(t, cfgJSON)
	wait("the end of the stream", func() bool { return strings.Contains(out.String(), "ended the stream (a config reload); reconnecting") })
	n := frames()
	wait("two frames after the reload", func() bool { return frames() >= n+2 })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("top exited %d", code)
	}
	if !strings.Contains(out.String(), "top-model") {
		t.Errorf("no frame shows the traffic:\n%s", out.String())
	}
}

// TestBenchAPI runs `llmtap bench --api-listen` against the mock and watches it with
// `llmtap top --once` while it runs: the bench's own requests show as class bench. Once the
// bench has ended, the API is gone.
func TestBenchAPI(t *testing.T) {
	_, url := testkit.StartMock(t, fastMock())
	addr := testkit.FreeAddr(t)
	type topResult struct {
		code int
		out  string
	}
	got := make(chan topResult, 1)
	go func() {
		// The API listens once the bench starts; top retries until its timeout.
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, out := runTopArgs(t, t.Context(), "--admin", addr, "--once", "--timeout", "5s")
			if code == 0 || time.Now().After(deadline) {
				got <- topResult{code, out}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	code, _, res, _ := runBenchArgs(t, "--url", url, "--model", "bench-model", "--request-rate", "40",
		"--benchmark-duration", "4", "--osl", "8", "--isl", "16", "--artifact-dir", t.TempDir(), "--api-listen", addr)
	if code != 0 || res == nil {
		t.Fatalf("bench exit %d", code)
	}
	r := <-got
	if r.code != 0 {
		t.Fatalf("top during the bench: exit %d\n%s", r.code, r.out)
	}
	t.Logf("frame:\n%s", r.out)
	row := topFields(r.out, "bench-model", "bench")
	if row == nil {
		t.Fatalf("no bench-model/bench row in top's frame:\n%s", r.out)
	}
	if rate, err := strconv.ParseFloat(row[2], 64); err != nil || rate <= 0 {
		t.Errorf("rate %q: want positive\n%s", row[2], r.out)
	}
	if !strings.Contains(r.out, "from stats") {
		t.Errorf("the bench's windows should say they come from its statistics:\n%s", r.out)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the API still listens on %s after the bench ended", addr)
	}
}
