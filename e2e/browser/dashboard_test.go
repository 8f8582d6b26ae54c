package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboard opens the dashboard from the admin listener while load runs through the proxy,
// waits for its charts and table to fill, checks the figures against the server's, that
// nothing was requested from anywhere but the admin listener and that no script failed, and
// saves a screenshot.
func TestDashboard(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		gpu          bool
	}{
		// The llmtap app runs the timeline, with GPU samples from a dcgm-exporter page: the
		// timeline's windows are drawn, GPU charts included.
		{"timeline", "timeline", true},
		// The handler alone: points derived from /llmtap/summary, no GPU.
		{"summary", "summary", false},
	} {
		t.Run(tc.name, func(t *testing.T) { testDashboard(t, tc.source, tc.gpu) })
	}
}

// dcgmPage serves the dcgm-exporter page of telemetry/scrape's tests (two H200s: GPU 0 idle at
// 108.364 W, GPU 1 at 97 % and 612.517 W) on a loopback port until the test ends.
func dcgmPage(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join("..", "..", "telemetry", "scrape", "testdata", "dcgm.prom"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(page) //nolint:errcheck
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func testDashboard(t *testing.T, source string, gpu bool) {
	globals := ""
	if gpu {
		globals = fmt.Sprintf("\tllmtap {\n\t\tgpu off\n\t\tscrape http://%s/metrics {\n\t\t\tkind dcgm\n\t\t\tinterval 200ms\n\t\t}\n\t}", dcgmPage(t))
	} else if source == "timeline" {
		globals = "\tllmtap"
	}
	p := startProxy(t, startMock(t), globals, "")
	ctx, stop := context.WithCancel(context.Background())
	wait := load(ctx, t, p.site, 3, 3000)
	defer func() { stop(); wait() }()

	b := newBrowser(t)
	tctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	dash := "http://" + p.admin + "/llmtap/ui/"
	if err := chromedp.Do(tctx, chromedp.Navigate(dash)); err != nil {
		t.Fatalf("opening %s: %v", dash, err)
	}
	// Four polls (a rate needs two) and a filled table of slow requests.
	ready := `Number(document.body.dataset.points) >= 4 && document.querySelectorAll("#slowest tbody tr").length === 10 && document.querySelectorAll("#usage tbody tr").length >= 1`
	if gpu {
		ready += ` && !document.getElementById("gpu").hidden`
	}
	_, err := chromedp.Run(tctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		b.check(t, func(*url.URL) bool { return true })
		t.Fatalf("the dashboard did not fill: %v", err)
	}
	type figures struct {
		TTFTPaths   int     `json:"ttft_paths"`
		RatePoints  int     `json:"rate_points"`
		TTFTP50     float64 `json:"ttft_p50"`
		ReqRate     float64 `json:"req_rate"`
		TimelineSVG int     `json:"timeline_svgs"`
		Status      string  `json:"status"`
		Shadow      string  `json:"shadow"`
		Source      string  `json:"source"`
		LoadsShown  bool    `json:"loads_shown"`
		GPUShown    bool    `json:"gpu_shown"`
		GPUs        []struct {
			Name  string  `json:"name"`
			Util  float64 `json:"util"`
			Power float64 `json:"power"`
		} `json:"gpus"`
		GPULines int `json:"gpu_lines"`
		// SplitBars counts the time-split bars with a prefill part whose parts fill the bar.
		SplitBars int `json:"split_bars"`
		// The usage table's first row: tenant, model, class and requests.
		Usage []string `json:"usage"`
		// GapRates is the live request rate of the points the dashboard draws from two
		// timeline windows four seconds apart (nothing in between): null where it breaks.
		GapRates []*float64 `json:"gap_rates"`
		// Swatches are the TTFT chart's legend swatches' dash patterns (p50 solid, p99 dashed).
		Swatches []string `json:"swatches"`
		// SplitLegend names the parts in the time-split legend.
		SplitLegend string `json:"split_legend"`
		// PageWidth is the page's scroll width in a 1400 px window.
		PageWidth int `json:"page_width"`
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[figures](`(() => {
		// The latest figures of the live class (a window may lack one: no first token in it).
		const latest = (f) => shown.map((p) => (p.groups.live || {})[f]).filter((v) => v != null).pop();
		return {
			ttft_paths: [...document.querySelectorAll("#chart-ttft path")].filter(p => (p.getAttribute("d") || "").includes("L")).length,
			rate_points: (document.querySelector("#chart-reqrate path").getAttribute("d").match(/L/g) || []).length,
			ttft_p50: latest("ttft_p50"), req_rate: latest("req_rate"),
			timeline_svgs: document.querySelectorAll("#slowest svg.timeline path[d^='M']").length,
			status: document.getElementById("status").textContent,
			shadow: document.getElementById("shadow-state").dataset.state,
			source: document.body.dataset.source,
			loads_shown: !document.getElementById("shadow-loads").hidden,
			gpu_shown: !document.getElementById("gpu").hidden,
			gpus: shown[shown.length - 1].gpus || [],
			gpu_lines: [...document.querySelectorAll("#chart-gpuutil path, #chart-gpupower path")].filter(p => (p.getAttribute("d") || "").includes("L")).length,
			split_bars: [...document.querySelectorAll("#slowest svg.split")].filter((svg) => {
				const w = (sel) => [...svg.querySelectorAll(sel)].reduce((a, r) => a + Number(r.getAttribute("width")), 0);
				return w("rect.seg-prefill") > 0 && w("rect.seg-proxy") >= 0 && Math.abs(w("rect") - 200) < 0.1;
			}).length,
			usage: [...document.querySelector("#usage tbody tr").cells].map((c) => c.textContent),
			swatches: [...document.querySelectorAll("#chart-ttft line.swatch")].map((l) => l.getAttribute("stroke-dasharray")),
			split_legend: document.getElementById("split-legend").textContent,
			page_width: document.documentElement.scrollWidth,
			gap_rates: (() => {
				const win = (seq) => ({seq, start_ms: seq * 1000, duration_ms: 1000, final: true,
					series: [{class: "live", model: "m", request_rate: 2, output_tokens_per_second: 5, errors: 0, in_flight: 1}]});
				const pts = Source.fromTimeline.call({windows: new Map(), windowMs: 0}, {window_ms: 1000, windows: [win(100), win(104)]});
				return pts.map((p) => p.groups.live ? p.groups.live.req_rate : null);
			})(),
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard: %+v", got)
	// p50 and p99 of the live class, each a line of several points.
	if got.TTFTPaths < 2 {
		t.Errorf("TTFT chart has %d lines with several points, want p50 and p99", got.TTFTPaths)
	}
	if got.RatePoints < 2 {
		t.Errorf("request-rate line has %d segments", got.RatePoints)
	}
	// Through the proxy a first token cannot come sooner than the mock sent it (15 ms, jittered
	// with CV 0.5: a median above 5 ms), and the median of a loopback stream is far below 5 s.
	if !(got.TTFTP50 > 5 && got.TTFTP50 < 5000) {
		t.Errorf("TTFT p50 on the dashboard is %v ms", got.TTFTP50)
	}
	if !(got.ReqRate > 0) {
		t.Errorf("request rate on the dashboard is %v while load runs", got.ReqRate)
	}
	if got.TimelineSVG != 10 {
		t.Errorf("%d token timelines drawn in the slowest-requests table, want 10", got.TimelineSVG)
	}
	// The mock reports llama.cpp's timings: every bar has the server's prefill among its parts,
	// and the parts fill the bar's 200 units.
	if got.SplitBars != 10 {
		t.Errorf("%d time-split bars with a prefill part filling the bar in the slowest-requests table, want 10", got.SplitBars)
	}
	if got.Source != source {
		t.Errorf("the dashboard read %q, want %s", got.Source, source)
	}
	// GPU charts: shown with the dcgm page's two GPUs, one line each in utilization and power.
	if got.GPUShown != gpu {
		t.Errorf("GPU charts shown %v, want %v", got.GPUShown, gpu)
	}
	if gpu {
		want := map[string][2]float64{"0: NVIDIA H200": {0, 108.364}, "1: NVIDIA H200": {97, 612.517}}
		if len(got.GPUs) != 2 || got.GPULines != 4 {
			t.Errorf("GPUs %+v with %d lines, want 2 GPUs and 4 lines", got.GPUs, got.GPULines)
		}
		for _, g := range got.GPUs {
			if w, ok := want[g.Name]; !ok || math.Abs(g.Util-w[0]) > 1e-6 || math.Abs(g.Power-w[1]) > 1e-6 {
				t.Errorf("GPU %+v, want the page's %v", g, want)
			}
		}
	}
	// The usage table: the load's requests, without a tenant, counted from /llmtap/summary.
	// Without a GPU no sample covers a request: its GPU time and cost are unknown, not free.
	if !gpu && (len(got.Usage) != 14 || got.Usage[10] != "–" || got.Usage[12] != "no GPU samples") {
		t.Errorf("usage row without a GPU reads %q, want GPU-s – and cost \"no GPU samples\"", got.Usage)
	}
	if len(got.Usage) < 4 || got.Usage[0] != "(none)" || got.Usage[2] != "live" {
		t.Errorf("usage table's first row %q, want (none), the model, live and a count", got.Usage)
	} else if n, err := strconv.Atoi(got.Usage[3]); err != nil || n <= 0 {
		t.Errorf("usage table's first row counts %q requests", got.Usage[3])
	}
	// Idle windows are drawn without values: the line breaks instead of joining 2 and 2 across
	// three windows without traffic (issue 34).
	if gap := fmt.Sprint(deref(got.GapRates)); gap != "[2 <nil> <nil> <nil> 2]" {
		t.Errorf("live request rate across an idle stretch drawn as %s, want [2 <nil> <nil> <nil> 2]", gap)
	}
	// The legend tells p50 (solid) from p99 (dashed); the time split's names every part; the
	// page fits the 1400 px window (issue 34).
	if sw := strings.Join(got.Swatches, " "); sw != "none 3,2" {
		t.Errorf("TTFT legend swatches dashed %q, want \"none 3,2\" (live p50, live p99)", sw)
	}
	for _, part := range []string{"proxy", "queue", "prefill", "network", "decode", "upstream", "generation"} {
		if !strings.Contains(got.SplitLegend, part) {
			t.Errorf("time-split legend %q lacks %s", got.SplitLegend, part)
		}
	}
	if got.PageWidth > 1400 {
		t.Errorf("the dashboard is %d px wide in a 1400 px window", got.PageWidth)
	}
	// No shadow load is configured: the controls say so (TestDashboardShadowControls drives
	// one).
	if got.Shadow != "none" || got.LoadsShown {
		t.Errorf("shadow controls: state %q, loads table shown %v", got.Shadow, got.LoadsShown)
	}
	b.screenshot(t, "dashboard-"+source+".png")
	b.check(t, func(u *url.URL) bool {
		return u.Scheme == "data" || (u.Scheme == "http" && u.Host == p.admin)
	})
}

// TestDashboardRoute checks the route's answers without a browser: the page with its policy,
// a redirect from the path without its slash, 404 under it, 405 for other methods.
func TestDashboardRoute(t *testing.T) {
	p := startProxy(t, startMock(t), "", "")
	base := "http://" + p.admin + "/llmtap/ui"
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		status       int
	}{
		// What a browser sends for a typed URL: admitted by the empty origin of the config.
		{http.MethodGet, "/", map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"}, http.StatusOK},
		{http.MethodGet, "", nil, http.StatusTemporaryRedirect},
		{http.MethodGet, "/app.js", nil, http.StatusNotFound},
		{http.MethodPost, "/", nil, http.StatusMethodNotAllowed},
		// A page of another origin is refused by Caddy's origin check.
		{http.MethodGet, "/", map[string]string{"Sec-Fetch-Mode": "cors", "Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		req, err := http.NewRequest(tc.method, base+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.header, resp.StatusCode, tc.status)
		}
		if resp.StatusCode == http.StatusOK && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("the page has no restrictive CSP: %q", resp.Header.Get("Content-Security-Policy"))
		}
	}

	// The slowest-requests query the table uses: the K slowest of the last N, slowest first.
	for _, n := range []int{4, 40, 12, 24, 8} {
		if err := send(context.Background(), client, p.site, "m1", n); err != nil {
			t.Fatal(err)
		}
	}
	lat := func(q string) []float64 {
		resp, err := client.Get("http://" + p.admin + "/llmtap/requests?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []float64
		dec := json.NewDecoder(resp.Body)
		for dec.More() {
			var r struct {
				Latency float64 `json:"request_latency_ms"`
			}
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Latency)
		}
		return out
	}
	// Records are finalized off the request path: wait until all five are in.
	all := lat("limit=5")
	for deadline := time.Now().Add(10 * time.Second); len(all) < 5 && time.Now().Before(deadline); all = lat("limit=5") {
		time.Sleep(20 * time.Millisecond)
	}
	top := lat("limit=5&slowest=3") // the five requests just sent
	slices.Sort(all)
	slices.Reverse(all)
	if len(all) != 5 || !slices.Equal(top, all[:3]) {
		t.Errorf("slowest 3 of %v: %v", all, top)
	}
	resp, err := client.Get("http://" + p.admin + "/llmtap/requests?slowest=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("slowest=0: status %d, want 400", resp.StatusCode)
	}
	client.CloseIdleConnections()
}

// deref writes each value of v, nil as <nil>.
func deref(v []*float64) []any {
	out := make([]any, len(v))
	for i, p := range v {
		if p != nil {
			out[i] = *p
		}
	}
	return out
}
