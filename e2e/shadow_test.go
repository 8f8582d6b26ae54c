package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/llmtap/llmtap/internal/loopback"
)

// shadowDoc is GET /llmtap/shadow, the fields used here.
type shadowDoc struct {
	Shadows []struct {
		Name     string          `json:"name"`
		State    string          `json:"state"`
		Sent     int64           `json:"sent"`
		Pauses   uint64          `json:"pauses"`
		Headroom json.RawMessage `json:"headroom"`
	} `json:"shadows"`
	Guard *struct {
		Tripped       bool    `json:"tripped"`
		Reason        string  `json:"reason"`
		LiveTTFTP99Ms float64 `json:"live_ttft_p99_ms"`
		LiveRequests  int64   `json:"live_requests"`
	} `json:"guard"`
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// saturation measures Ollama's throughput of 64-token streams with 4 clients sending back to
// back for d: the rate it saturates at on this machine, now.
func saturation(t *testing.T, d time.Duration) float64 {
	post(t, env.ollama+"/v1/chat/completions", "", chatBody(true, false)) // the model is loaded
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.ollama+"/v1/chat/completions", strings.NewReader(string(chatBody(true, false))))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && ctx.Err() == nil {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// TestShadowAgainstOllama loads shadow load into Caddy in front of the real Ollama: Poisson
// shadow load above its saturation makes live TTFT rise until the guard rails pause it and
// live TTFT recovers; then a headroom probe with a stated SLO finds a headroom consistent with
// the saturation measured at the start. Bounded to about a minute.
func TestShadowAgainstOllama(t *testing.T) {
	sat := saturation(t, 5*time.Second)
	t.Logf("Ollama saturates at %.2f requests/s of 64-token streams on this machine now", sat)
	if sat < 0.5 {
		t.Fatalf("Ollama served %.2f requests/s: too slow to test shadow load against", sat)
	}
	admin, site := mustAddr(t), mustAddr(t)
	const ttftLimit = 750 * time.Millisecond
	shadowRate := 2 * sat // well above saturation
	load := func(shadow string) {
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
			window 4s
			ttft_p99 %v
			min_requests 3
			cooldown 4s
		}
		%s
	}
}
http://%s {
	llmtap
	reverse_proxy %s
}
`, admin, ttftLimit, shadow, site, strings.TrimPrefix(env.ollama, "http://"))
		cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": t.Name()})
		if err != nil {
			t.Fatalf("adapting: %v\n%s", err, cf)
		}
		if err := caddy.Load(cfgJSON, true); err != nil {
			t.Fatalf("loading: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := caddy.Load(env.config, true); err != nil {
			t.Errorf("restoring the e2e config: %v", err)
		}
	})
	load(fmt.Sprintf(`shadow sat {
			url http://%s/v1/chat/completions
			model %s
			rate %.2f
			arrival poisson
			isl 32
			extra max_tokens:64
			max_in_flight 16
			stopped
		}`, site, model, shadowRate))

	// Live traffic: one 64-token stream a second.
	ctx, cancel := context.WithCancel(context.Background())
	var live sync.WaitGroup
	live.Go(func() {
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+site+"/v1/chat/completions", strings.NewReader(string(chatBody(true, true))))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
	defer func() { cancel(); live.Wait() }()

	status := func() shadowDoc {
		var d shadowDoc
		getJSON(t, "http://"+admin+"/llmtap/shadow", &d)
		return d
	}
	time.Sleep(4 * time.Second)
	base := status()
	t.Logf("live alone: TTFT p99 %.0f ms over %d requests", base.Guard.LiveTTFTP99Ms, base.Guard.LiveRequests)
	if base.Guard.Tripped || base.Guard.LiveTTFTP99Ms >= float64(ttftLimit.Milliseconds())/2 {
		t.Fatalf("live traffic alone already near the limit: %+v", *base.Guard)
	}

	resp, err := http.Post("http://"+admin+"/llmtap/shadow/sat/start", "application/json", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("starting the shadow load: %v %v", err, resp)
	}
	resp.Body.Close()
	started := time.Now()
	var tripped shadowDoc
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if tripped = status(); tripped.Shadows[0].State == "paused" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shadow load at %.2f req/s (2x saturation) never tripped the guard rails: %+v", shadowRate, tripped)
		}
	}
	t.Logf("guard rails paused the shadow load %v after it started: %s (live TTFT p99 %.0f ms, was %.0f ms alone; %d shadow requests sent)",
		time.Since(started).Round(time.Millisecond), tripped.Guard.Reason, tripped.Guard.LiveTTFTP99Ms, base.Guard.LiveTTFTP99Ms, tripped.Shadows[0].Sent)
	if !strings.HasPrefix(tripped.Guard.Reason, "live_ttft_p99") || tripped.Guard.LiveTTFTP99Ms <= 2*base.Guard.LiveTTFTP99Ms {
		t.Fatalf("tripped for %q with live p99 %.0f ms (alone %.0f ms): want live TTFT risen past the limit", tripped.Guard.Reason, tripped.Guard.LiveTTFTP99Ms, base.Guard.LiveTTFTP99Ms)
	}
	// The guard pulls it back: once the queue drains and the slow requests leave the window,
	// live TTFT is back under the limit.
	var rec shadowDoc
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if rec = status(); rec.Guard.LiveTTFTP99Ms < float64(ttftLimit.Milliseconds()) && rec.Guard.LiveRequests >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live TTFT did not recover after the pause: %+v", *rec.Guard)
		}
	}
	t.Logf("live TTFT p99 back to %.0f ms %v after the pause", rec.Guard.LiveTTFTP99Ms, time.Since(started).Round(time.Millisecond))
	http.Post("http://"+admin+"/llmtap/shadow/sat/stop", "application/json", nil)

	// The headroom probe: steps of 1 req/s, 4 s each, SLO TTFT 750 ms for 90 % of requests.
	step := max(0.5, float64(int(sat*2)/2)/4) // about a quarter of the saturation, in halves
	load(fmt.Sprintf(`shadow probe {
			url http://%s/v1/chat/completions
			model %s
			isl 32
			extra max_tokens:64
			max_in_flight 16
			headroom {
				start %v
				step %v
				max %v
				step_duration 4s
				slo time_to_first_token:%d
				attainment 0.9
				min_live 3
			}
		}`, site, model, step, step, 3*sat, ttftLimit.Milliseconds()))
	var h struct {
		State                      string  `json:"state"`
		Verdict                    string  `json:"verdict"`
		HeadroomRequestsPerSec     float64 `json:"headroom_requests_per_sec"`
		HeadroomOutputTokensPerSec float64 `json:"headroom_output_tokens_per_sec"`
		LastPassingRate            float64 `json:"last_passing_rate"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		getJSON(t, "http://"+admin+"/llmtap/shadow/probe/headroom", &h)
		if h.State == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the headroom probe did not finish: %+v", h)
		}
	}
	tr, _ := http.Get("http://" + admin + "/llmtap/shadow/probe/headroom?format=text")
	table, _ := io.ReadAll(tr.Body)
	tr.Body.Close()
	t.Logf("headroom against Ollama (saturation %.2f req/s, live ~1 req/s):\n%s", sat, table)
	// Consistent with the saturation: live (~1 req/s) plus the headroom cannot exceed what
	// Ollama serves at saturation (a fifth over for the 4 s steps' noise), and the probe found
	// a real share of it.
	if total := h.HeadroomRequestsPerSec + 1; total > 1.2*sat || h.HeadroomRequestsPerSec < 0.25*sat {
		t.Errorf("headroom %.2f req/s (+ ~1 live) against a saturation of %.2f req/s", h.HeadroomRequestsPerSec, sat)
	}
	if !strings.Contains(h.Verdict, "failed") {
		t.Errorf("the probe did not stop at a failing step: %q", h.Verdict)
	}
}

func mustAddr(t *testing.T) string {
	t.Helper()
	a, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}
