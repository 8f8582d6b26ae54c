// Package browser holds llmtap's browser tests: the live dashboard and the HTML report in a
// real headless Chromium (Debian's chromium, installed by `make tools` through
// bench/chromium.sh), driven with chromedp, against real Caddy loaded in-process with the
// llmtap handler in front of the mock inference server, all on loopback.
//
// The browser runs with host resolution limited to 127.0.0.1 and every request it makes is
// checked: the pages must not reach anything but the admin listener (or, for a report opened
// from a file, nothing at all). Screenshots go to $LLMTAP_ARTIFACTS when set, else to the
// test's temporary folder; the test log names them.
package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// browserPath finds the Chromium that `make tools` installs.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: run `make tools` (bench/chromium.sh installs Debian's chromium)")
	return ""
}

// browser is one headless Chromium with one tab, and what the tab did.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	requests []string // every URL the tab requested
	problems []string // console errors, uncaught exceptions, error log entries (CSP, failed loads)
}

// newBrowser starts Chromium headless, sandbox off (CI runs as root), a fresh profile, host
// names resolving to nothing but 127.0.0.1, and listens to the tab's network, console and log
// events. It stops when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1500),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	b := &browser{ctx: ctx}
	// The first call starts the browser and its tab (chromedp enables the network and log
	// domains); it must not carry a timeout, which would end the browser with it.
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, "console."+string(e.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// check fails the test on any console error or exception, and on any request to a URL that
// allowed does not accept.
func (b *browser) check(t *testing.T, allowed func(u *url.URL) bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("browser: %s", p)
	}
	if len(b.requests) == 0 {
		t.Error("the browser made no request at all: the event listener saw nothing")
	}
	for _, raw := range b.requests {
		u, err := url.Parse(raw)
		if err != nil || !allowed(u) {
			t.Errorf("the page requested %s", raw)
		}
	}
}

// screenshot saves a full-page PNG as a test artifact, checks it decodes at the page's width,
// and returns its path.
func (b *browser) screenshot(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(buf))
	if err != nil || format != "png" || cfg.Width < 800 || cfg.Height < 600 {
		t.Fatalf("screenshot is not a full-page PNG: %v %s %dx%d", err, format, cfg.Width, cfg.Height)
	}
	dir := os.Getenv("LLMTAP_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (%dx%d): %s", cfg.Width, cfg.Height, p)
	// Every page fits the 1400 px window the browser opens (issue 34: pages were wider).
	if cfg.Width > 1400 {
		t.Errorf("%s is %d px wide in a 1400 px window", name, cfg.Width)
	}
	return p
}

// startMock serves the mock inference server on a free loopback port until the test ends.
func startMock(t *testing.T) string {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.JitterCV = 15*time.Millisecond, 2*time.Millisecond, 0.5
	cfg.Timings = true // llama.cpp's timings: the dashboard's time-split bars have a server part
	_, u := testkit.StartMock(t, cfg)
	return strings.TrimPrefix(u, "http://")
}

// proxy is Caddy loaded in-process: llmtap and reverse_proxy in front of the mock.
type proxy struct {
	admin, site string // host:port
}

// startProxy loads Caddy with llmtap (with the handler options in handlerBody, and the global
// options in globals, such as the llmtap app, where {site} stands for the site's address) in
// front of upstream, and stops it when the test ends. The admin listener also accepts requests that
// carry no Origin: that is how a browser opens a typed URL (see the README's dashboard
// section), and Caddy refuses such requests from browsers unless told otherwise.
func startProxy(t *testing.T, upstream, globals, handlerBody string) *proxy {
	t.Helper()
	return startCaddy(t, upstream, globals, handlerBody, true)
}

// startCaddy is startProxy, with the admin listener's empty origin only when typedURLs is set
// (without it, the admin listener is as the README's basic config leaves it).
func startCaddy(t *testing.T, upstream, globals, handlerBody string, typedURLs bool) *proxy {
	t.Helper()
	admin, site := testkit.FreeAddr(t), testkit.FreeAddr(t)
	origins := ""
	if typedURLs {
		origins = fmt.Sprintf(" {\n\t\torigins %s \"\"\n\t}", admin)
	}
	cf := fmt.Sprintf(`{
	admin %[1]s%[7]s
%[6]s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %[2]s
	log {
		level ERROR
	}
}

http://%[3]s {
	llmtap {
%[4]s
	}
	reverse_proxy %[5]s
}
`, admin, t.TempDir(), site, handlerBody, upstream, strings.ReplaceAll(globals, "{site}", site), origins)
	testkit.StartCaddyfile(t, "browser-test", cf)
	return &proxy{admin: admin, site: site}
}

// chatBody is a streaming chat completion of n tokens.
func chatBody(model string, n int) string {
	return fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me a story about a lighthouse."}]}`, model, n)
}

// send makes one streaming request through the proxy and reads the whole response.
func send(ctx context.Context, client *http.Client, site, model string, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+site+"/v1/chat/completions", strings.NewReader(chatBody(model, n)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// load sends requests through the proxy from workers goroutines until ctx ends or max
// requests were sent, and returns how many succeeded once they have all returned.
func load(ctx context.Context, t *testing.T, site string, workers, max int) func() int64 {
	var ok, sent atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; sent.Add(1) <= int64(max); i++ {
				if ctx.Err() != nil {
					return
				}
				if err := send(ctx, client, site, "m1", 16+(w*7+i*13)%48); err == nil {
					ok.Add(1)
				} else if ctx.Err() == nil {
					t.Errorf("request through the proxy: %v", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	return func() int64 {
		wg.Wait()
		client.CloseIdleConnections()
		return ok.Load()
	}
}
