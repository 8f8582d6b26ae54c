package llmtap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
)

// shadowMock is a fast mock: 5 ms to the first token, 1 ms per token, 16 tokens.
func shadowMock() mock.Config {
	return mock.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, OutputTokens: 16,
		TokensPerChunk: 1, Seed: 3, PromptCounter: mock.PromptApprox, LogLimit: 100_000}
}

// markerLog counts the requests that reach the upstream with the Llmtap-Shadow header, and
// can switch between upstreams (the guard-rail test degrades the server so) or answer 429.
type markerLog struct {
	marked     atomic.Int64
	status429  atomic.Bool
	mu         sync.Mutex
	upstream   http.Handler
	markValues []string
}

func (m *markerLog) set(h http.Handler) { m.mu.Lock(); m.upstream = h; m.mu.Unlock() }

func (m *markerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("Llmtap-Shadow"); v != "" {
		m.marked.Add(1)
		m.mu.Lock()
		m.markValues = append(m.markValues, v)
		m.mu.Unlock()
	}
	if m.status429.Load() {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
		return
	}
	m.mu.Lock()
	h := m.upstream
	m.mu.Unlock()
	h.ServeHTTP(w, r)
}

// shadowProxy is a loaded config whose llmtap global option names the site's own address.
type shadowProxy struct {
	*proxy
	site string // host:port of the site
}

// serveShadowMock serves the shadow tests' mock (shadowMock) on loopback and returns it with
// its address.
func serveShadowMock(t *testing.T) (*mock.Server, string) {
	t.Helper()
	mock, err := mock.New(shadowMock())
	if err != nil {
		t.Fatal(err)
	}
	return mock, testkit.Serve(t, mock)
}

// loadShadowProxy loads a Caddyfile with one site (llmtap + reverse_proxy to upstream) and the
// llmtap global option globals(site), where site is the site's host:port.
func loadShadowProxy(t *testing.T, upstream string, globals func(site string) string) (*shadowProxy, []byte) {
	t.Helper()
	admin, addr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	p := &shadowProxy{proxy: &proxy{admin: "http://" + admin, sites: []string{"http://" + addr}}, site: addr}
	cf := caddyfileFor(admin, globals(addr), []string{addr}, []site{{body: "\tllmtap\n\treverse_proxy " + upstream}})
	return p, testkit.StartCaddyfile(t, t.Name(), cf)
}

// reload loads a Caddyfile with the same addresses and new globals.
func (p *shadowProxy) reload(t *testing.T, upstream string, globals string) {
	t.Helper()
	admin := strings.TrimPrefix(p.admin, "http://")
	cf := caddyfileFor(admin, globals, []string{p.site}, []site{{body: "\tllmtap\n\treverse_proxy " + upstream}})
	testkit.Load(t, testkit.Adapt(t, t.Name(), cf))
}

// shadowLoad is one load in GET /llmtap/shadow (the fields the tests use).
type shadowLoad struct {
	Name         string  `json:"name"`
	State        string  `json:"state"`
	PauseReason  string  `json:"pause_reason"`
	Rate         float64 `json:"rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Draining     bool    `json:"draining"`
	InFlight     int64   `json:"in_flight"`
	Sent         int64   `json:"sent"`
	OK           int64   `json:"ok"`
	Errors       int64   `json:"errors"`
	Dropped      int64   `json:"dropped"`
	LastError    string  `json:"last_error"`
	Pauses       uint64  `json:"pauses"`
	Resumes      uint64  `json:"resumes"`
	LagCount     int64   `json:"lag_count"`
	LagP50Ms     float64 `json:"lag_p50_ms"`
	LagP99Ms     float64 `json:"lag_p99_ms"`
	LagMaxMs     float64 `json:"lag_max_ms"`
}

// shadowStatus is what GET /llmtap/shadow returns (the fields the tests use).
type shadowStatus struct {
	Shadows []shadowLoad `json:"shadows"`
	Guard   *struct {
		Tripped       bool    `json:"tripped"`
		Reason        string  `json:"reason"`
		Trips         uint64  `json:"trips"`
		Clears        uint64  `json:"clears"`
		LiveTTFTP99Ms float64 `json:"live_ttft_p99_ms"`
		LiveRequests  int64   `json:"live_requests"`
	} `json:"guard"`
	ForgedMarkers   uint64 `json:"forged_markers"`
	ReplayedMarkers uint64 `json:"replayed_markers"`
	ExpiredMarkers  uint64 `json:"expired_markers"`
}

func (p *shadowProxy) shadowStatus(t *testing.T) shadowStatus {
	t.Helper()
	var st shadowStatus
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/shadow"), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// one returns the status of the single shadow load.
func (st shadowStatus) one(t *testing.T) shadowLoad {
	t.Helper()
	if len(st.Shadows) != 1 {
		t.Fatalf("%d shadow loads, want 1: %+v", len(st.Shadows), st)
	}
	return st.Shadows[0]
}

func (p *shadowProxy) adminPost(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(p.admin+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

// gapStats returns the mean rate and the coefficient of variation of the gaps between
// consecutive times.
func gapStats(ts []time.Time) (rate, cv float64) {
	if len(ts) < 3 {
		return 0, 0
	}
	var sum, sq float64
	for i := 1; i < len(ts); i++ {
		g := ts[i].Sub(ts[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	n := float64(len(ts) - 1)
	mean := sum / n
	sd := math.Sqrt(max(sq/n-mean*mean, 0))
	return 1 / mean, sd / mean
}

// medianGap returns the median gap between consecutive times, in seconds.
func medianGap(ts []time.Time) float64 {
	if len(ts) < 2 {
		return 0
	}
	gaps := make([]float64, len(ts)-1)
	for i := range gaps {
		gaps[i] = ts[i+1].Sub(ts[i]).Seconds()
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

func TestShadowArrivalShapeAtTheMock(t *testing.T) {
	// A shadow load alone: the mock's arrival log (its own clock, on arrival) shows the
	// configured rate and shape. The schedule is seeded, so its intended times are fixed and
	// known (recomputed here); what the mock sees is them plus the generator's lateness and the
	// proxy hop, which on a loaded two-core machine under the race detector reach tens of ms.
	// So: the intended schedule must be Poisson-like (for Poisson: the gaps' CV within ±3.5
	// standard errors of 1), the mock's count must equal what the load sent and the schedule
	// holds, and — unless the generator itself stalled — the mean rate at the mock must be the
	// configured one within 25 % and the shape at the mock the schedule's (see below).
	for _, tc := range []struct {
		arrival      string
		rate         float64
		dur          time.Duration
		cvLo, cvHi   float64 // of the intended schedule
		medLo, medHi float64 // median gap / mean gap at the mock
	}{
		{"poisson", 20, 4 * time.Second, 0.6, 1.4, 0.5, 0.9},
		{"constant", 10, 3 * time.Second, 0, 0.35, 0.9, 1.1},
	} {
		t.Run(tc.arrival, func(t *testing.T) {
			mock, up := serveShadowMock(t)
			p, _ := loadShadowProxy(t, up, func(site string) string {
				return fmt.Sprintf(`	llmtap {
		shadow s {
			url http://%s/v1/chat/completions
			model shadow-m
			rate %v
			arrival %s
			isl 32
			osl 16
			seed 7
			duration %v
		}
	}`, site, tc.rate, tc.arrival, tc.dur)
			})
			// The intended schedule: the runner's unit-rate process (seed 7) at the rate.
			base, err := gen.ArrivalSpec{Pattern: tc.arrival, Rate: 1}.New(rand.New(rand.NewPCG(7, 0x5ad0)))
			if err != nil {
				t.Fatal(err)
			}
			var intended []time.Time
			t0 := time.Unix(0, 0)
			for {
				at := time.Duration(float64(base.Next()) / tc.rate)
				if at >= tc.dur {
					break
				}
				intended = append(intended, t0.Add(at))
			}
			_, cvIntended := gapStats(intended)
			if cvIntended < tc.cvLo || cvIntended > tc.cvHi {
				t.Fatalf("the intended %s schedule has gap CV %.3f, want %v-%v", tc.arrival, cvIntended, tc.cvLo, tc.cvHi)
			}

			var s = p.shadowStatus(t).one(t)
			waitUntil(t, 15*time.Second, "the shadow load to finish", func() bool {
				s = p.shadowStatus(t).one(t)
				return s.State == "done" && !s.Draining && s.InFlight == 0 && s.OK+s.Errors == s.Sent
			})
			arr := mock.Arrivals()
			rate, cv := gapStats(arr)
			t.Logf("%s: %d arrivals (%d intended), mean rate %.2f/s (configured %v), gap CV %.3f (intended %.3f); lag p50 %.3f ms p99 %.3f ms max %.3f ms",
				tc.arrival, len(arr), len(intended), rate, tc.rate, cv, cvIntended, s.LagP50Ms, s.LagP99Ms, s.LagMaxMs)
			if int64(len(arr)) < s.OK || s.OK != s.Sent || s.Dropped != 0 {
				t.Fatalf("the mock saw %d requests; the load sent %d, %d ok, %d dropped", len(arr), s.Sent, s.OK, s.Dropped)
			}
			// The supervisor starts and ends the schedule on a 50 ms tick: a request more or less
			// at either end, and a few more where the machine stalled at an end (it then
			// starts or stops the schedule late: its longest lag says so).
			slack := 2
			if s.LagMaxMs > 100 {
				slack += len(intended) / 10
			}
			if d := len(arr) - len(intended); d < -slack || d > slack {
				t.Errorf("the mock saw %d requests, the schedule has %d (schedule lag max %.0f ms)", len(arr), len(intended), s.LagMaxMs)
			}
			// The shape at the mock, robust to the stalls of a loaded machine (a stall holds back
			// a few requests, which then arrive together: a few gaps change, the median does
			// not): median gap / mean gap is ln 2 ≈ 0.69 for exponential gaps and 1 for even
			// ones. The CV itself, which a single stall inflates, only has to stay well clear of
			// a bursty process.
			// A stall long against the gaps makes any timing at the mock meaningless; the
			// generator's own lag says whether one happened (the counts above still hold).
			ratio := medianGap(arr) * rate
			if gap := 1000 / rate; s.LagP99Ms > 0.75*gap {
				t.Logf("the machine stalled (schedule lag p99 %.0f ms against gaps of %.0f ms): the shape at the mock is not judged in this run", s.LagP99Ms, gap)
			} else {
				if math.Abs(rate-tc.rate)/tc.rate > 0.25 {
					t.Errorf("mean arrival rate %.2f/s at the mock, configured %v", rate, tc.rate)
				}
				if ratio < tc.medLo || ratio > tc.medHi || cv > cvIntended+0.75 {
					t.Errorf("at the mock: median/mean gap %.3f (want %v-%v), CV %.3f (intended %.3f) for %s arrivals", ratio, tc.medLo, tc.medHi, cv, cvIntended, tc.arrival)
				}
			}
		})
	}
}

func TestShadowBesideLiveTraffic(t *testing.T) {
	// Live clients and shadow load at once: the summary keeps them apart, the upstream never
	// sees the marker, and a client forging it is live (and counted).
	mock, err := mock.New(shadowMock())
	if err != nil {
		t.Fatal(err)
	}
	ml := &markerLog{}
	ml.set(mock)
	up := testkit.Serve(t, ml)
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		shadow s {
			url http://%s/v1/chat/completions
			model shadow-m
			rate 30
			isl 32
			osl 16
		}
	}`, site)
	})
	forged0 := p.shadowStatus(t).ForgedMarkers
	c := newClient(t)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 10 {
				if _, _, err := testkit.PostJSON(context.Background(), c, p.sites[0]+"/v1/chat/completions", fmt.Sprintf("live-%d-%d", w, i), chatBody("live-m", 8, true, true)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	// A client sends the header with values of its own, one of them shaped like a mark.
	forgeries := []string{"1", "shadow", "shadow.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA"}
	for i, v := range forgeries {
		req, _ := http.NewRequest(http.MethodPost, p.sites[0]+"/v1/chat/completions", bytes.NewReader(chatBody("forged-m", 8, true, true)))
		req.Header.Set("Llmtap-Shadow", v)
		req.Header.Set("X-Request-Id", fmt.Sprintf("forged-%d", i))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	wg.Wait()
	waitUntil(t, 10*time.Second, "30 shadow requests", func() bool { return p.shadowStatus(t).one(t).OK >= 30 })
	if code, body := p.adminPost(t, "/llmtap/shadow/s/stop", ""); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	waitUntil(t, 10*time.Second, "the shadow load to stop", func() bool { return p.shadowStatus(t).one(t).State == "stopped" })
	st := p.shadowStatus(t)
	s := st.one(t)

	groups, _, _ := p.summary(t)
	for k := range groups {
		model, class, _ := strings.Cut(k, "/")
		class, _, _ = strings.Cut(class, "/")
		want := map[string]string{"live-m": "live", "forged-m": "live", "shadow-m": "shadow"}[model]
		if class != want {
			t.Errorf("summary group %s: model %s is in class %s, want %s", k, model, class, want)
		}
	}
	if g := groups["live-m/live/2xx"]; g.RequestCount.Avg != 30 {
		t.Errorf("live-m/live/2xx holds %v requests, want 30", g.RequestCount.Avg)
	}
	if g := groups["forged-m/live/2xx"]; g.RequestCount.Avg != float64(len(forgeries)) {
		t.Errorf("forged requests: %v counted live, want %d", g.RequestCount.Avg, len(forgeries))
	}
	if g := groups["shadow-m/shadow/2xx"]; int64(g.RequestCount.Avg) != s.OK || s.Errors != 0 {
		t.Errorf("shadow-m/shadow/2xx holds %v requests; the load sent %d ok, %d errors", g.RequestCount.Avg, s.OK, s.Errors)
	}
	if got := st.ForgedMarkers - forged0; got != uint64(len(forgeries)) {
		t.Errorf("forged markers counted %d, want %d", got, len(forgeries))
	}
	// Verified marks are removed before proxying; forged values pass untouched (live traffic is
	// not altered).
	if n := ml.marked.Load(); n != int64(len(forgeries)) {
		t.Errorf("the upstream saw the marker header on %d requests, want only the %d forged ones", n, len(forgeries))
	}
	if v := promValue(t, p.proxy, "llmtap_shadow_marker_forged_total"); v < float64(len(forgeries)) {
		t.Errorf("llmtap_shadow_marker_forged_total = %v", v)
	}
}

func TestShadowAdminControl(t *testing.T) {
	mock, up := serveShadowMock(t)
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		shadow ctl {
			url http://%s/v1/chat/completions
			model m
			rate 20
			max_rate 50
			isl 16
			osl 8
			stopped
		}
	}`, site)
	})
	if s := p.shadowStatus(t).one(t); s.State != "stopped" || s.Sent != 0 {
		t.Fatalf("a load configured stopped is %s with %d sent", s.State, s.Sent)
	}
	tests := []struct {
		path, body string
		code       int
		why        string
	}{
		{"/llmtap/shadow/ctl/start", "", 200, "start"},
		{"/llmtap/shadow/ctl/rate", `{"rate": 51}`, 400, "over max_rate"},
		{"/llmtap/shadow/ctl/rate", `{"rate": 3000}`, 400, "over the hard ceiling"},
		{"/llmtap/shadow/ctl/rate", `{"rate": -1}`, 400, "negative"},
		{"/llmtap/shadow/ctl/rate", `{"rat": 5}`, 400, "misspelled field"},
		{"/llmtap/shadow/ctl/rate", `{"rate": 40}`, 200, "within max_rate"},
		{"/llmtap/shadow/nope/start", "", 404, "unknown load"},
		{"/llmtap/shadow/ctl/explode", "", 404, "unknown action"},
	}
	for _, tt := range tests {
		if code, body := p.adminPost(t, tt.path, tt.body); code != tt.code {
			t.Errorf("%s (%s): %d %s, want %d", tt.path, tt.why, code, body, tt.code)
		}
	}
	resp, err := http.Get(p.admin + "/llmtap/shadow/ctl/headroom")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("headroom of a load that is not a probe: %s, want 404", resp.Status)
	}
	// Running once the site's listener is seen accepting (a tick after the load).
	s := p.shadowStatus(t).one(t)
	waitUntil(t, 5*time.Second, "the started load to run", func() bool {
		s = p.shadowStatus(t).one(t)
		return s.State == "running"
	})
	if s.Rate != 40 {
		t.Fatalf("after start and rate 40: %+v", s)
	}
	waitUntil(t, 5*time.Second, "requests at 40/s", func() bool { return p.shadowStatus(t).one(t).Sent >= 40 })
	p.adminPost(t, "/llmtap/shadow/ctl/stop", "")
	waitUntil(t, 5*time.Second, "stopped", func() bool { return p.shadowStatus(t).one(t).State == "stopped" })
	n := p.shadowStatus(t).one(t).Sent
	time.Sleep(300 * time.Millisecond)
	if s := p.shadowStatus(t).one(t); s.Sent != n || int64(len(mock.Arrivals())) != n {
		t.Fatalf("a stopped load sent %d more (mock saw %d of %d)", s.Sent-n, len(mock.Arrivals()), n)
	}
}

func TestShadowReloadAdoptsTheRunningLoad(t *testing.T) {
	mock, up := serveShadowMock(t)
	globals := func(site string, rate int) string {
		return fmt.Sprintf(`	llmtap {
		shadow r {
			url http://%s/v1/chat/completions
			model m
			rate %d
			arrival constant
			isl 16
			osl 8
		}
	}`, site, rate)
	}
	p, _ := loadShadowProxy(t, up, func(site string) string { return globals(site, 20) })
	waitUntil(t, 5*time.Second, "20 requests", func() bool { return p.shadowStatus(t).one(t).Sent >= 20 })

	// The same config again: the load goes on, its counters continue, and the mock sees one
	// load's rate, not two.
	before := p.shadowStatus(t).one(t)
	p.reload(t, up, globals(p.site, 20))
	after := p.shadowStatus(t).one(t)
	if after.Sent < before.Sent || after.State != "running" {
		t.Fatalf("after a reload: %+v, before %+v", after, before)
	}
	t0, n0 := time.Now(), len(mock.Arrivals())
	time.Sleep(time.Second)
	n1, t1 := len(mock.Arrivals()), time.Now()
	rate := float64(n1-n0) / t1.Sub(t0).Seconds()
	if rate < 14 || rate > 26 {
		t.Fatalf("%.1f requests/s at the mock after an identical reload, want about 20 (not 40: no second load)", rate)
	}
	// A changed rate is applied in place.
	p.reload(t, up, globals(p.site, 40))
	s := p.shadowStatus(t).one(t)
	if s.Rate != 40 || s.Sent < after.Sent {
		t.Fatalf("after reloading with rate 40: %+v", s)
	}
	t0, n0 = time.Now(), len(mock.Arrivals())
	time.Sleep(time.Second)
	n1, t1 = len(mock.Arrivals()), time.Now()
	if rate := float64(n1-n0) / t1.Sub(t0).Seconds(); rate < 30 || rate > 50 {
		t.Fatalf("%.1f requests/s at the mock after reloading with rate 40", rate)
	}
	// A config without the load removes it.
	p.reload(t, up, "")
	if st := p.shadowStatus(t); len(st.Shadows) != 0 {
		t.Fatalf("a config without shadow loads still has %+v", st.Shadows)
	}
	n := len(mock.Arrivals())
	time.Sleep(200 * time.Millisecond)
	if m := len(mock.Arrivals()); m > n+1 {
		t.Fatalf("the removed load still sends: %d more", m-n)
	}
}

func TestShadowConfigErrors(t *testing.T) {
	// Problems only the built config shows are refused when the config is provisioned, all at
	// once, naming the load.
	tests := []struct{ name, body, want string }{
		{"synthetic load without a model", "url http://127.0.0.1:1/v1/chat/completions\n rate 5", `shadow "a": model is required`},
		{"no url", "model m\n rate 5", `url "": want the http:// or https:// URL`},
		{"no rate", "url http://127.0.0.1:1/v1/chat/completions\n model m", "request rate 0 must be a positive"},
		{"rate over max_rate", "url http://127.0.0.1:1/v1/chat/completions\n model m\n rate 10\n max_rate 5", "rate 10 exceeds max_rate 5"},
		{"rate over the hard ceiling", "url http://127.0.0.1:1/v1/chat/completions\n model m\n rate 5000", "hard ceiling of 2000"},
		{"in flight over the hard ceiling", "url http://127.0.0.1:1/v1/chat/completions\n model m\n rate 5\n max_in_flight 5000", "max_in_flight 5000: want 1-4096"},
		{"a missing trace file", "url http://127.0.0.1:1/v1/chat/completions\n trace /nonexistent/trace.jsonl", "reading the trace"},
		{"headroom without slo", "url http://127.0.0.1:1/v1/chat/completions\n model m\n headroom {\n start 1\n step 1\n max 2\n }", "slo is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cf := "{\n\tadmin off\n\tllmtap {\n\t\tshadow a {\n" + tt.body + "\n\t\t}\n\t}\n}\n:0 {\n\tllmtap\n}\n"
			cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "Caddyfile"})
			if err != nil {
				t.Fatalf("adapting: %v", err)
			}
			var cfg *caddy.Config
			if err := caddy.StrictUnmarshalJSON(cfgJSON, &cfg); err != nil {
				t.Fatal(err)
			}
			err = caddy.Validate(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validating: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestShadowTraceReplay(t *testing.T) {
	// A trace shadow load: each request at its recorded time (÷ speedup), measured as class
	// replay, and the load is done when the trace runs out.
	mock, up := serveShadowMock(t)
	dir := t.TempDir()
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 8, "hash_ids": [%d]}`+"\n", i*200, 20+i, i)
	}
	path := dir + "/trace.jsonl"
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		shadow tr {
			url http://%s/v1/chat/completions
			model trace-m
			trace %s {
				speedup 2
			}
		}
	}`, site, path)
	})
	var s = p.shadowStatus(t).one(t)
	waitUntil(t, 10*time.Second, "the trace to run out", func() bool {
		s = p.shadowStatus(t).one(t)
		return s.State == "done" && !s.Draining && s.InFlight == 0 && s.OK+s.Errors == s.Sent
	})
	arr := mock.Arrivals()
	if s.Sent != 6 || s.OK != 6 || len(arr) != 6 {
		t.Fatalf("sent %d, ok %d (last error %q), the mock saw %d; want the trace's 6", s.Sent, s.OK, s.LastError, len(arr))
	}
	// Recorded 200 ms apart, replayed at speedup 2: 100 ms apart, 500 ms from the first to the
	// last. Each was released late by at most the load's largest schedule lag, and reached the
	// mock a loopback hop later (allowed 200 ms): a stall of the machine widens the window by
	// what the generator itself measured, never by a guess.
	span := arr[5].Sub(arr[0])
	slack := 200*time.Millisecond + time.Duration(s.LagMaxMs*float64(time.Millisecond))
	if d := span - 500*time.Millisecond; d < -slack || d > slack {
		t.Errorf("the 6 requests spanned %v at the mock, want 500 ms ± %v (the largest schedule lag %.1f ms + 200 ms)", span, slack, s.LagMaxMs)
	}
	groups, _, _ := p.summary(t)
	if g := groups["trace-m/replay/2xx"]; g.RequestCount.Avg != 6 || len(groups) != 1 {
		t.Errorf("summary groups %v; want the 6 requests as trace-m/replay/2xx only", groups)
	}
	if code, _ := p.adminPost(t, "/llmtap/shadow/tr/rate", `{"rate": 3}`); code != http.StatusConflict {
		t.Errorf("setting the rate of a trace load answered %d, want 409", code)
	}
}
