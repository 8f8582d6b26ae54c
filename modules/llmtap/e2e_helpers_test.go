package llmtap_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"go.uber.org/goleak"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive
	"github.com/llmtap/llmtap/internal/tee"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestMain runs the end-to-end tests, then shuts down what Caddy keeps between configs (the
// admin server survives caddy.Stop) and checks that no goroutine leaked. It is
// goleak.VerifyTestMain with a shutdown step between the tests and the check, which
// VerifyTestMain has no hook for (its Cleanup option runs after the check).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "llmtap-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	storageDir = dir
	code := m.Run()
	// Shutdown disables the admin endpoint, which stops the last admin server; Caddy does that
	// in a goroutine, which goleak's retries wait for.
	if err := testkit.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: goroutines leaked after the tests:", err)
			code = 1
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "removing the storage folder:", err)
	}
	os.Exit(code)
}

// storageDir is where Caddy keeps its storage (locks, certificates) during the tests, instead
// of the user's data folder.
var storageDir string

// leakOptions ignores the one goroutine Caddy leaves running by design: certmagic refreshes a
// storage lock file (taken by the tls app's storage cleaning) in a goroutine that sleeps for
// seconds between checks and only notices the lock was released when it wakes.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/caddyserver/certmagic.keepLockfileFresh"),
		// Caddy's file log writer (timberjack) starts a goroutine that prunes rotated files and
		// ends only when the writer is closed; the writers of TestSecretsNeverLeak's log files
		// were still open after the final config and caddy.Stop (observed with Caddy 2.11.9).
		goleak.IgnoreTopFunction("github.com/DeRuina/timberjack.(*Logger).millRun"),
		// regexp2's clock for match timeouts (a tokenizer file's patterns run with one) stops by
		// itself about two seconds after the last match.
		goleak.IgnoreTopFunction("github.com/dlclark/regexp2/v2.runClock"),
	}
}

// causalSlackMs absorbs float rounding only in the timing comparisons (checkTiming explains
// the quantities): they are all on this process's monotonic clock, where causality orders them
// exactly, so a time outside its bounds is a bug (an event attributed to the wrong write).
const causalSlackMs = 0.001

// upstream is the mock inference server behind a tee that keeps, per X-Request-Id, the exact
// bytes the mock wrote, so a test can compare them with what the client got through the proxy.
type upstream struct {
	mock *mock.Server
	addr string // host:port
	tee  *tee.Tee
}

// startUpstream serves a mock with cfg on a free loopback port (HTTP/1.1, as reverse_proxy
// speaks to it) and stops it when the test ends.
func startUpstream(t *testing.T, cfg mock.Config) *upstream {
	t.Helper()
	mock, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{mock: mock, tee: tee.New(mock)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	base, cancel := context.WithCancel(context.Background())
	hs := &http.Server{
		Handler:           u,
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		cancel() // ends in-flight streams at once
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := hs.Shutdown(ctx); err != nil {
			// A connection Caddy left mid-request (it was stopped first) never turns idle;
			// closing it is what a server does after its grace period. The handlers
			// themselves have all returned: goleak in TestMain checks that.
			t.Logf("stopping the mock gracefully: %v; closing its connections", err)
			_ = hs.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("mock server: %v", err)
		}
	})
	return u
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.tee.ServeHTTP(w, r) }

// sentBody returns the bytes the mock wrote for request id.
func (u *upstream) sentBody(id string) ([]byte, bool) { return u.tee.Sent(id) }

// proxy is one loaded Caddy config: llmtap in front of upstreams.
type proxy struct {
	admin string // http://host:port of the admin API
	sites []string
}

// site is one server block: its address is filled in by loadProxy.
type site struct {
	body string // directives inside the block
}

// caddyfileFor renders a Caddyfile with the given admin address, extra global options and
// sites (listening on addrs).
func caddyfileFor(admin, globals string, addrs []string, sites []site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin %s\n\tdefault_bind 127.0.0.1\n\tauto_https off\n\tpersist_config off\n\tstorage file_system %s\n\tlog {\n\t\tlevel ERROR\n\t}\n%s\n}\n",
		admin, storageDir, globals)
	for i, s := range sites {
		fmt.Fprintf(&b, "\nhttp://%s {\n%s\n}\n", addrs[i], s.body)
	}
	return b.String()
}

// loadProxy starts Caddy in-process with the sites on free loopback ports and stops it when
// the test ends.
func loadProxy(t *testing.T, globals string, sites ...site) (*proxy, string) {
	t.Helper()
	admin := testkit.FreeAddr(t)
	addrs := make([]string, len(sites))
	p := &proxy{admin: "http://" + admin}
	for i := range sites {
		addrs[i] = testkit.FreeAddr(t)
		p.sites = append(p.sites, "http://"+addrs[i])
	}
	cf := caddyfileFor(admin, globals, addrs, sites)
	llmtap.ResetModelLabels() // the first 64 models of each test keep their own series
	testkit.StartCaddyfile(t, t.Name(), cf)
	if llmtap.ActiveTap() == nil {
		t.Fatal("the config loaded but no llmtap engine is running")
	}
	return p, cf
}

// chatBody is a chat completion request for maxTokens tokens.
func chatBody(model string, maxTokens int, stream, usage bool) []byte {
	body := map[string]any{
		"model":      model,
		"stream":     stream,
		"max_tokens": maxTokens,
		"messages":   []map[string]string{{"role": "user", "content": "Tell me about the lighthouse keeper."}},
	}
	if usage {
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(body)
	return b
}

// newClient returns a client that does not ask for compression (so the body is the bytes the
// upstream sent) and keeps enough idle connections for the concurrency of the tests.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// reloadedClient is newClient for the requests that follow a config reload. Caddy's new
// server listens on the port beside the old one (SO_REUSEPORT) until the old one has closed its
// socket, which Caddy starts but does not wait for; a connection the kernel queued on the old
// socket meanwhile is reset, and its request never reaches a handler. Such a request (a reset
// or an EOF on a new connection) is sent again, at most 20 times, and logged. Were it to have
// reached llmtap after all, the tests' counts of records and metrics would show it twice.
func reloadedClient(t *testing.T) *http.Client {
	c := newClient(t)
	c.Transport = resendReset{t: t, base: c.Transport}
	return c
}

type resendReset struct {
	t    *testing.T
	base http.RoundTripper
}

func (r resendReset) RoundTrip(req *http.Request) (*http.Response, error) {
	for try := 1; ; try++ {
		reused := false
		traced := req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		}))
		resp, err := r.base.RoundTrip(traced)
		if err == nil || reused || try == 20 || req.Context().Err() != nil || req.GetBody == nil ||
			!(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)) {
			return resp, err
		}
		r.t.Logf("%s %s: %v: sent again, on a new connection (try %d)", req.Method, req.URL, err, try+1)
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, gerr
		}
		req = req.Clone(req.Context())
		req.Body = body
		time.Sleep(10 * time.Millisecond)
	}
}

// runs numbers the names ownName hands out.
var runs atomic.Int64

// ownName is base with a number no other call in this process gets: a model name or request
// id prefix of its own keeps a test's share of process-wide state (the Prometheus collectors,
// the mirror's pairs) apart from earlier tests and from earlier runs of the same test
// (go test -count=N).
func ownName(base string) string { return fmt.Sprintf("%s%d", base, runs.Add(1)) }

// timed is a streamed response with the client's times, all on this process's monotonic
// clock.
type timed struct {
	resp    *http.Response
	body    []byte
	sent    time.Time   // just before the request was sent: before the proxy saw it
	headers time.Time   // when the response headers were in: after the proxy saw them
	reads   []time.Time // per event, when it was complete at the client (see readTimed)
}

// postTimed sends req and reads the streamed response to its end, timing it; each is passed to
// readTimed.
func postTimed(c *http.Client, req *http.Request, each func(k int)) (timed, error) {
	tr := timed{sent: time.Now()}
	resp, err := c.Do(req)
	tr.headers, tr.resp = time.Now(), resp
	if err != nil {
		return tr, err
	}
	defer resp.Body.Close()
	tr.body, tr.reads, err = readTimed(resp.Body, each)
	return tr, err
}

// readTimed reads an SSE stream to its end and returns it with the time each event (ended by a
// blank line) was complete: when the Read that delivered its last byte returned. Those times
// bound every time a proxy on the way can have measured, as it saw an event's bytes before the
// client could read them. each, when not nil, is called with an event's index as soon as it
// is complete.
func readTimed(r io.Reader, each func(k int)) ([]byte, []time.Time, error) {
	var (
		got   []byte
		reads []time.Time
		buf   = make([]byte, 32<<10)
	)
	for {
		n, err := r.Read(buf)
		at := time.Now()
		from := max(len(got)-1, 0) // a "\n\n" may straddle two reads
		got = append(got, buf[:n]...)
		for i := from; i+1 < len(got); i++ {
			if got[i] == '\n' && got[i+1] == '\n' {
				reads = append(reads, at)
				if each != nil {
					each(len(reads) - 1)
				}
			}
		}
		if err == io.EOF {
			return got, reads, nil
		}
		if err != nil {
			return got, reads, err
		}
	}
}

// adminGet fetches path from the admin API.
func (p *proxy) adminGet(t *testing.T, path string) []byte {
	t.Helper()
	return testkit.Get(t, p.admin+path)
}

// records waits for the pipeline and returns the recent records by request id.
func (p *proxy) records(t *testing.T) map[string]record.Record {
	t.Helper()
	waitIdle(t)
	b := p.adminGet(t, "/llmtap/requests?limit=1000")
	out := make(map[string]record.Record)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("decoding a record: %v: %s", err, sc.Bytes())
		}
		out[r.RequestID] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitIdle waits (bounded) until no request is being measured, then for the record pipeline.
// A handler ends its measurement after the client may already have its last byte.
func waitIdle(t *testing.T) {
	t.Helper()
	tp := llmtap.ActiveTap()
	if tp == nil {
		t.Fatal("no llmtap engine is running")
	}
	deadline := time.Now().Add(10 * time.Second)
	for tp.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still being measured after 10 s", tp.InFlight())
		}
		time.Sleep(2 * time.Millisecond)
	}
	tp.Flush()
}

// summaryGroup is the part of a /llmtap/summary group the tests read.
type summaryGroup struct {
	Model        string `json:"model"`
	Class        string `json:"class"`
	StatusClass  string `json:"status_class"`
	Window       string `json:"window"`
	RequestCount struct {
		Avg float64 `json:"avg"`
	} `json:"request_count"`
	TTFT struct {
		Count int64   `json:"count"`
		P50   float64 `json:"p50"`
	} `json:"time_to_first_token"`
	Errors map[string]int64 `json:"errors"`
}

// summary fetches /llmtap/summary and returns its cumulative groups by model/status class.
func (p *proxy) summary(t *testing.T) (groups map[string]summaryGroup, inFlight int64, dropped uint64) {
	t.Helper()
	waitIdle(t)
	var doc struct {
		InFlight       int64  `json:"in_flight"`
		RecordsDropped uint64 `json:"records_dropped"`
		Summary        struct {
			Groups []summaryGroup `json:"groups"`
		} `json:"summary"`
	}
	b := p.adminGet(t, "/llmtap/summary")
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decoding the summary: %v: %s", err, b)
	}
	groups = make(map[string]summaryGroup)
	for _, g := range doc.Summary.Groups {
		if g.Window == "cumulative" {
			groups[g.Model+"/"+g.Class+"/"+g.StatusClass] = g
		}
	}
	return groups, doc.InFlight, doc.RecordsDropped
}

// promSample is one sample of the Prometheus text exposition.
type promSample struct {
	labels map[string]string
	value  float64
}

// metricSamples fetches the admin /metrics and returns the samples of the series name.
func (p *proxy) metricSamples(t *testing.T, name string) []promSample {
	t.Helper()
	waitIdle(t)
	b := p.adminGet(t, "/metrics")
	var out []promSample
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		lbl, val, ok := strings.Cut(rest, "} ")
		if !ok {
			t.Fatalf("unparsable sample %q", line)
		}
		s := promSample{labels: make(map[string]string)}
		for kv := range strings.SplitSeq(lbl, ",") {
			k, v, _ := strings.Cut(kv, "=")
			s.labels[k] = strings.Trim(v, `"`)
		}
		f, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err != nil {
			t.Fatalf("unparsable value in %q: %v", line, err)
		}
		s.value = f
		out = append(out, s)
	}
	return out
}

// metricValue returns the value of the sample of name whose labels include want, or 0 when
// there is none.
func (p *proxy) metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	for _, s := range p.metricSamples(t, name) {
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
			}
		}
		if match {
			return s.value
		}
	}
	return 0
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile returns the q-quantile of xs, nearest rank (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// msSince is b - a in float milliseconds.
func msSince(a, b time.Time) float64 { return record.Ms(b.Sub(a)) }
