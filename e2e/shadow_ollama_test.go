package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/guard"
	"github.com/llmtap/llmtap/load/shadow"
)

// loadModel is stories260K on one llama.cpp thread (bench/ollama.sh says why).
const loadModel = "stories260k-1t"

// loadBody is a 64-token chat stream asking for usage, like the other e2e tests', for loadModel.
var loadBody = func() []byte {
	var m map[string]any
	if err := json.Unmarshal(chatBody(true, true), &m); err != nil {
		panic(err)
	}
	m["model"] = loadModel
	b, _ := json.Marshal(m)
	return b
}()

// TestShadowAgainstOllama runs shadow load inside Caddy in front of the real Ollama (four
// parallel slots, the model on one llama.cpp thread: see bench/ollama.sh) beside live
// traffic, and judges everything against figures it measures itself in the same run, since
// this machine's speed is not fixed:
//
//  1. Saturation: closed-loop clients (twice Ollama's slots) send 64-token chat streams through
//     the llmtap site; the median of three windows of completed streams per second is the
//     anchor S.
//  2. Live traffic alone: one 64-token stream every 1/λ s (λ = S/5, 1-4 req/s, open loop); the
//     guard rails' live TTFT p99 over their window is the baseline B. The TTFT limit is
//     L = max(500 ms, 4 B) (a stall of this shared machine alone must not reach it).
//  3. Guard rails: Poisson shadow load at 3 S (in flight bounded so that a full queue holds
//     about 4 L of work) must raise live TTFT past L, the guard must pause it for
//     live_ttft_p99 with a p99 above 2 B, and live TTFT must then fall back under L while the
//     shadow load stays paused (the cool-down outlasts the test).
//  4. Headroom: a probe in steps of about S/6 with the SLO "TTFT ≤ L for 90 % of live and
//     shadow requests" must stop at a failing step, and the headroom it reports plus the live
//     rate must lie between 0.25 and 1.3 times the saturation (the lower of S and a second
//     measurement after the probe for the lower bound, the higher for the upper): a step
//     above the capacity left fails, its queue growing without bound; the lower bound allows
//     for steps below it failing on Poisson bursts and stalls of this shared machine (it asks
//     little more than that the first step, S/6 + λ ≈ 0.37 S, passed).
//
// The shadow requests are shaped like the live ones (a 4-word prompt, 64 tokens): with 32-word
// prompts Ollama saturated at 12-13 streams/s instead of 20, and the headroom came out at 0.38
// of a saturation measured with the short prompt.
//
// A run (go test -race -count=1 -run TestShadowAgainstOllama -v ./e2e/) logs every figure;
// BENCHMARKS.md quotes measured runs.
func TestShadowAgainstOllama(t *testing.T) {
	const slots = 4 // OLLAMA_NUM_PARALLEL in bench/ollama.sh
	x := newShadowOllama(t)
	x.load(t, time.Minute, time.Minute, "")

	// 1. Saturation.
	sat, windows := x.saturation(t, 2*slots, time.Second, 3, 2500*time.Millisecond)
	t.Logf("saturation S: %.2f req/s of 64-token streams through llmtap (median of windows %s)", sat, fmtRates(windows))
	if sat < 1 {
		t.Fatalf("Ollama served %.2f requests/s through llmtap: too slow to judge shadow load against", sat)
	}

	// 2. Live traffic alone.
	liveRate := min(max(sat/5, 1), 4)
	stopLive := sync.OnceFunc(x.live(liveRate))
	defer stopLive()
	time.Sleep(x.window + 500*time.Millisecond) // the window holds live requests only
	base := x.status(t).Guard
	if base == nil || base.LiveRequests < int64(x.minRequests) {
		t.Fatalf("too little live traffic in the guard's window to judge: %+v", base)
	}
	limit := max(500*time.Millisecond, time.Duration(4*base.LiveTTFTP99Ms*float64(time.Millisecond))).Round(time.Millisecond)
	inFlight := min(max(slots+int(math.Ceil(4*limit.Seconds()*sat)), 16), 256)
	t.Logf("live alone at %.2f req/s: TTFT p99 B %.1f ms over %d requests; limit L %v; shadow in flight ≤ %d",
		liveRate, base.LiveTTFTP99Ms, base.LiveRequests, limit, inFlight)

	// 3. Guard rails: shadow Poisson load at three times the saturation.
	shadowRate := 3 * sat
	x.load(t, limit, time.Minute, fmt.Sprintf(`shadow sat {
			url %s/v1/chat/completions
			model %s
			rate %.2f
			arrival poisson
			seed 3
			isl 4
			extra max_tokens:64
			max_in_flight %d
			stopped
		}`, x.site, loadModel, shadowRate, inFlight))
	if g := x.status(t).Guard; g == nil || g.Tripped {
		t.Fatalf("the guard is tripped before any shadow load: %+v", g)
	}
	x.post(t, "/llmtap/shadow/sat/start")
	started := time.Now()
	var tripped shadowDoc
	x.waitFor(t, 30*time.Second, "the guard rails to pause the shadow load", func() bool {
		tripped = x.status(t)
		return tripped.shadow(t, "sat").State == "paused"
	})
	pausedAfter := time.Since(started)
	s := tripped.shadow(t, "sat")
	t.Logf("shadow at %.2f req/s (3 S) paused after %v: %s; live TTFT p99 %.0f ms (%.1fx B); %d shadow requests sent, %d dropped at the in-flight bound",
		shadowRate, pausedAfter.Round(time.Millisecond), tripped.Guard.Reason, tripped.Guard.LiveTTFTP99Ms,
		tripped.Guard.LiveTTFTP99Ms/base.LiveTTFTP99Ms, s.Sent, s.Dropped)
	if !strings.HasPrefix(tripped.Guard.Reason, guard.ReasonTTFT) {
		t.Fatalf("the guard tripped for %q, want %s", tripped.Guard.Reason, guard.ReasonTTFT)
	}
	if tripped.Guard.LiveTTFTP99Ms <= 2*base.LiveTTFTP99Ms {
		t.Fatalf("live TTFT p99 %.0f ms at the trip, alone %.0f ms: want it risen more than twofold", tripped.Guard.LiveTTFTP99Ms, base.LiveTTFTP99Ms)
	}
	var back shadowDoc
	x.waitFor(t, 45*time.Second, "live TTFT to fall back under the limit", func() bool {
		back = x.status(t)
		return back.Guard.LiveRequests >= int64(x.minRequests) && back.Guard.LiveTTFTP99Ms < float64(limit.Milliseconds())
	})
	if st := back.shadow(t, "sat"); st.State != "paused" {
		t.Fatalf("the shadow load is %s before the cool-down ended: %+v", st.State, st)
	}
	t.Logf("live TTFT p99 back to %.1f ms over %d requests %v after the pause, the shadow load still paused",
		back.Guard.LiveTTFTP99Ms, back.Guard.LiveRequests, (time.Since(started) - pausedAfter).Round(time.Millisecond))
	x.post(t, "/llmtap/shadow/sat/stop")

	// 4. Headroom probe. A changed cool-down makes a new guard: it starts clear.
	step := max(0.25, math.Round(sat/6*4)/4)
	x.load(t, limit, 59*time.Second, fmt.Sprintf(`shadow probe {
			url %s/v1/chat/completions
			model %s
			seed 7
			isl 4
			extra max_tokens:64
			max_in_flight %d
			headroom {
				start %v
				step %v
				max %v
				step_duration 3s
				slo time_to_first_token:%d
				attainment 0.9
				min_live 3
			}
		}`, x.site, loadModel, inFlight, step, step, math.Ceil(3*sat/step)*step, limit.Milliseconds()))
	var h shadow.HeadroomReport
	x.waitFor(t, 100*time.Second, "the headroom probe to finish", func() bool {
		x.get(t, "/llmtap/shadow/probe/headroom", &h)
		return h.State == "done"
	})
	t.Logf("headroom probe (S %.2f req/s):\n%s", sat, x.text(t, "/llmtap/shadow/probe/headroom?format=text"))
	if !strings.Contains(h.Verdict, "failed") {
		t.Fatalf("the probe did not stop at a failing step: %q", h.Verdict)
	}
	last := slices.IndexFunc(h.Steps, func(s shadow.StepReport) bool { return s.Verdict != "pass" }) - 1
	if last < 0 {
		t.Fatalf("no step passed (first step %v req/s): %q", step, h.Verdict)
	}
	passed := h.Steps[last]
	total := h.HeadroomRequestsPerSec + passed.Live.RequestsPerSec

	// The saturation again, the live traffic stopped: the machine's speed may have changed.
	stopLive()
	after, windows := x.saturation(t, 2*slots, time.Second, 3, 2500*time.Millisecond)
	lo, hi := min(sat, after), max(sat, after)
	t.Logf("headroom %.2f req/s (%.0f output tokens/s, %.1f tokens a shadow request) + live %.2f req/s = %.2f req/s = %.2f S; saturation after the probe %.2f req/s (windows %s)",
		h.HeadroomRequestsPerSec, h.HeadroomOutputTokensPerSec, h.HeadroomOutputTokensPerSec/h.HeadroomRequestsPerSec,
		passed.Live.RequestsPerSec, total, total/sat, after, fmtRates(windows))
	if total < 0.25*lo || total > 1.3*hi {
		t.Errorf("headroom %.2f + live %.2f = %.2f req/s, outside 0.25 × %.2f - 1.3 × %.2f req/s (the saturation before and after)",
			h.HeadroomRequestsPerSec, passed.Live.RequestsPerSec, total, lo, hi)
	}
}

// shadowDoc is GET /llmtap/shadow.
type shadowDoc struct {
	Shadows []shadow.Status `json:"shadows"`
	Guard   *guard.State    `json:"guard"`
}

func (d shadowDoc) shadow(t *testing.T, name string) shadow.Status {
	t.Helper()
	for _, s := range d.Shadows {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no shadow load %q in %+v", name, d.Shadows)
	return shadow.Status{}
}

// shadowOllama is a Caddy config of its own in front of Ollama (the e2e config is restored
// when the test ends): one llmtap site, the guard rails, and the shadow load under test.
type shadowOllama struct {
	admin, site string
	window      time.Duration
	minRequests int
}

func newShadowOllama(t *testing.T) *shadowOllama {
	x := &shadowOllama{window: 5 * time.Second, minRequests: 3}
	admin, err1 := loopback.FreeAddr()
	site, err2 := loopback.FreeAddr()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	x.admin, x.site = "http://"+admin, "http://"+site
	t.Cleanup(func() {
		if err := testkit.LoadConfig(env.config); err != nil {
			t.Errorf("restoring the e2e config: %v", err)
		}
	})
	return x
}

// load loads the config with the guard's TTFT limit and cool-down and the shadow block.
func (x *shadowOllama) load(t *testing.T, limit, cooldown time.Duration, shadow string) {
	t.Helper()
	cf := fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	log {
		level ERROR
	}
	llmtap {
		guard {
			window %v
			ttft_p99 %v
			min_requests %d
			cooldown %v
		}
		%s
	}
}
%s {
	llmtap
	reverse_proxy %s
}
`, strings.TrimPrefix(x.admin, "http://"), x.window, limit, x.minRequests, cooldown, shadow, x.site, strings.TrimPrefix(env.ollama, "http://"))
	testkit.Load(t, testkit.Adapt(t, t.Name(), cf))
}

// stream sends one 64-token chat stream through the site and reads it to the end.
func (x *shadowOllama) stream(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.site+"/v1/chat/completions", bytes.NewReader(loadBody))
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
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// saturation runs clients closed-loop streams through the site for ramp and then n windows
// of d, and returns the median of the windows' completed streams per second, and each.
func (x *shadowOllama) saturation(t *testing.T, clients int, ramp time.Duration, n int, d time.Duration) (float64, []float64) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := x.stream(ctx); err != nil { // the model loaded
		t.Fatalf("a first stream through llmtap: %v", err)
	}
	start := time.Now().Add(ramp)
	var mu sync.Mutex
	counts := make([]int, n)
	var failed error
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := x.stream(ctx)
				at := time.Since(start)
				mu.Lock()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					failed = err
				case at >= 0 && at < time.Duration(n)*d:
					counts[at/d]++
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Until(start.Add(time.Duration(n) * d)))
	cancel()
	wg.Wait()
	if failed != nil {
		t.Fatalf("a saturation stream failed: %v", failed)
	}
	rates := make([]float64, n)
	for i, c := range counts {
		rates[i] = float64(c) / d.Seconds()
	}
	s := slices.Sorted(slices.Values(rates))
	return s[n/2], rates
}

// live sends a stream through the site every 1/rate s, each on its own (open loop), until
// the function it returns is called.
func (x *shadowOllama) live(rate float64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				wg.Go(func() { _ = x.stream(ctx) })
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

func (x *shadowOllama) status(t *testing.T) shadowDoc {
	t.Helper()
	var d shadowDoc
	x.get(t, "/llmtap/shadow", &d)
	return d
}

func (x *shadowOllama) get(t *testing.T, path string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(x.text(t, path)), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func (x *shadowOllama) text(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(x.admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s: %s", path, err, resp.Status, b)
	}
	return string(b)
}

func (x *shadowOllama) post(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Post(x.admin+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
}

// waitFor polls cond every 100 ms until it holds, failing after limit.
func (x *shadowOllama) waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}

func fmtRates(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(s, ", ")
}
