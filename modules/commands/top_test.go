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

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/stats"
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

// TestTopFrame renders a window with every part: the table sorted by model and class, idle
// rows, errors with their main class, GPU, server and shadow lines, and lines cut to a width.
func TestTopFrame(t *testing.T) {
	inFlight, zero := int64(3), int64(0)
	util, power, temp := 87.0, 512.4, 65.0
	used, total := uint64(80<<30), uint64(141<<30)
	kv, running := 0.43, 12.0
	w := &llmtapv1.TimelineWindow{
		Seq: 5, Start: timestamppb.New(time.Date(2026, 12, 1, 3, 40, 11, 0, time.UTC)), Duration: durationpb.New(time.Second),
		Source: "timeline", InFlight: 4,
		Series: []*llmtapv1.Series{
			{Model: "m", Class: "live", Requests: 20, RequestRate: 20, OutputTokenRate: 320, InFlight: &inFlight,
				TtftMs: &llmtapv1.Quantiles{P50: 12.34, P99: 40, Count: 20}, ItlMs: &llmtapv1.Quantiles{P50: 1.02, P99: 3.4, Count: 20},
				Errors: 3, ErrorsByClass: map[string]int64{"http_status": 2, "truncated": 1}},
			{Model: "a", Class: "shadow", Requests: 1, RequestRate: 1, InFlight: &zero},
		},
		Gpus:    []*llmtapv1.GPU{{Index: 0, Name: "NVIDIA H200", UtilizationPercent: &util, PowerWatts: &power, TemperatureCelsius: &temp, MemoryUsedBytes: &used, MemoryTotalBytes: &total}},
		Servers: []*llmtapv1.ServerModel{{Kind: "vllm", Model: "m", KvCacheUsage: &kv, Running: &running}},
		Shadow:  &llmtapv1.ShadowState{Loads: []*llmtapv1.ShadowLoad{{Name: "s", State: "running", Rate: 10, AchievedRate: 9.8, Sent: 120, Ok: 118}}},
	}
	v := &topView{cfg: topConfig{base: "http://127.0.0.1:2019", keep: 2}, rows: map[[2]string]*topRow{}}
	v.add(&llmtapv1.TimelineWindow{Seq: 4, Series: []*llmtapv1.Series{{Model: "b", Class: "live"}, {Model: "gone", Class: "live"}}})
	v.add(&llmtapv1.TimelineWindow{Seq: 1}) // an older window must not expire rows
	v.add(w)
	f := v.frame(w, 0)
	for _, want := range []string{
		"llmtap top  http://127.0.0.1:2019  03:40:12 UTC  window 1s from timeline\nin flight 4",
		"GPU 0 NVIDIA H200  util 87%  power 512 W  mem 80.0/141.0 GiB  65°C\n",
		"server vllm m  kv cache 43%  running 12\n",
		"shadow s  running  rate 10/s (achieved 9.8/s)  in flight 0  sent 120  ok 118  errors 0  dropped 0\n",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
	row := topFields(f, "m", "live")
	if want := []string{"m", "live", "20.0", "12.3ms", "40.0ms", "1.02ms", "3.40ms", "320.0", "3", "(http_status)", "3"}; !slicesEqual(row, want) {
		t.Errorf("row m/live %q, want %q", row, want)
	}
	if row := topFields(f, "b", "live"); !slicesEqual(row, []string{"b", "live", "0.0", "-", "-", "-", "-", "0.0", "0", "-"}) {
		t.Errorf("idle row b/live %q: want zero rate and dashes", row)
	}
	if strings.Index(f, "\n  a") > strings.Index(f, "\n  b") || !strings.Contains(f, "gone") {
		t.Errorf("rows not sorted by model, or a row within keep dropped:\n%s", f)
	}
	v.add(&llmtapv1.TimelineWindow{Seq: 8})
	if f := v.frame(&llmtapv1.TimelineWindow{Seq: 8}, 0); strings.Contains(f, "gone") || !strings.Contains(f, "(no requests yet)") {
		t.Errorf("rows idle for more than keep windows still listed:\n%s", f)
	}
	for line := range strings.Lines(v.frame(w, 40)) {
		if n := len([]rune(strings.TrimSuffix(line, "\n"))); n > 40 {
			t.Errorf("line of %d runes at width 40: %q", n, line)
		}
	}
}

// TestTopFrameStats checks the header of windows from the aggregator's statistics (a config
// without the timeline): the window named is the one the counts and rates cover, and the span
// of the percentiles is named apart when it differs.
func TestTopFrameStats(t *testing.T) {
	end := time.Date(2026, 12, 1, 3, 40, 12, 0, time.UTC)
	series := func(rate float64) []*llmtapv1.Series {
		return []*llmtapv1.Series{{Model: "m", Class: "live", Requests: int64(rate), RequestRate: rate, TtftMs: &llmtapv1.Quantiles{P50: 20, P99: 30, Count: 600}}}
	}
	for _, tc := range []struct {
		name           string
		start          time.Time
		duration, span time.Duration
		rate           float64
		header, row    string
	}{
		{"a second", end.Add(-time.Second), time.Second, time.Minute, 19,
			"window 1s from stats (percentiles over the last 1m0s)\n", "19.0"},
		{"the first window", end.Add(-time.Minute), time.Minute, time.Minute, 5.6,
			"window 1m0s from stats\n", "5.6"},
	} {
		w := &llmtapv1.TimelineWindow{Seq: 9, Start: timestamppb.New(tc.start), Duration: durationpb.New(tc.duration),
			Span: durationpb.New(tc.span), Source: "stats", Series: series(tc.rate)}
		v := &topView{cfg: topConfig{base: "http://127.0.0.1:2019", keep: 2}, rows: map[[2]string]*topRow{}}
		v.add(w)
		f := v.frame(w, 0)
		if !strings.Contains(f, "03:40:12 UTC  "+tc.header) {
			t.Errorf("%s: header of\n%s\nwant %q", tc.name, f, tc.header)
		}
		if row := topFields(f, "m", "live"); len(row) < 3 || row[2] != tc.row {
			t.Errorf("%s: row %q, want REQ/S %s", tc.name, row, tc.row)
		}
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
	cfg := mockllm.DefaultConfig()
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

// TestTopReplacesFinal checks that a window sent again final replaces its provisional version
// in the row's totals, and that it is not the window to show.
func TestTopReplacesFinal(t *testing.T) {
	v := &topView{cfg: topConfig{keep: 10}, rows: map[[2]string]*topRow{}}
	series := func(req int64, in float64) []*llmtapv1.Series {
		return []*llmtapv1.Series{{Model: "m", Class: "live", Requests: req, Errors: 1, InputTokens: in, OutputTokens: 2 * in}}
	}
	if !v.add(&llmtapv1.TimelineWindow{Seq: 5, Series: series(3, 30)}) || !v.add(&llmtapv1.TimelineWindow{Seq: 6, Series: series(1, 10)}) {
		t.Fatal("a newer window is not reported as the one to show")
	}
	if v.add(&llmtapv1.TimelineWindow{Seq: 5, Final: true, Series: series(4, 70)}) {
		t.Error("window 5 sent again final is reported as the one to show")
	}
	r := v.rows[[2]string{"m", "live"}]
	if want := (topCounts{requests: 5, errors: 2, input: 80, output: 160}); r.total != want {
		t.Errorf("totals %+v, want %+v (window 5 replaced by its final version)", r.total, want)
	}
	if r.last != 6 || r.s.GetRequests() != 1 || len(r.provisional) != 1 {
		t.Errorf("row shows window %d with %d requests, %d provisional: want window 6, 1, and only 6 provisional", r.last, r.s.GetRequests(), len(r.provisional))
	}
}

// TestTopTenantsWithoutGPU: a tenant whose requests no GPU sample covered shows no GPU time
// and "no GPU*" with its footnote as its cost, not 0.0000 (issue 34: a price without a GPU
// read as free); one with GPU time shows its cost.
func TestTopTenantsWithoutGPU(t *testing.T) {
	v := &topView{}
	rows := []stats.Usage{
		{UsageKey: stats.UsageKey{Tenant: "gpu-team", Model: "m", Class: "live"}, Requests: 4, GPUSeconds: 2, Cost: 0.0012},
		{UsageKey: stats.UsageKey{Tenant: "cpu-team", Model: "m", Class: "live"}, Requests: 3},
	}
	out := v.tenantTable(rows)
	var gpu, cpu string
	for l := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(l, "gpu-team"):
			gpu = l
		case strings.HasPrefix(l, "cpu-team"):
			cpu = l
		}
	}
	if !strings.Contains(gpu, " 2.00 ") || !strings.Contains(gpu, "0.0012") {
		t.Errorf("tenant with GPU time: %q", gpu)
	}
	if !strings.Contains(cpu, "no GPU*") || strings.Contains(cpu, "0.0000 ") || !strings.Contains(out, "* no GPU samples:") {
		t.Errorf("tenant without GPU samples: %q in\n%s", cpu, out)
	}
}
