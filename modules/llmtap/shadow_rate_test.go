package llmtap_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/mockllm"
)

// TestShadowRateAccuracy measures how exactly a shadow load inside Caddy keeps a constant
// rate, against an anchor measured in the same run: the same schedule sent by loadgen.Run
// directly (from the test, not the app) through the same site to the same mock. The shadow
// load must achieve its rate at the mock about as well as the anchor does (within 10 % of the
// configured rate: on a loaded machine both fall short, the shadow load a little more since it
// ends exactly at its duration where the anchor still sends what was overdue); the figures
// (BENCHMARKS.md) are logged with -v.
//
// LLMTAP_SHADOW_RATES (e.g. "100 500 1000") replaces the rates, for the benchmark figures.
func TestShadowRateAccuracy(t *testing.T) {
	const dur = 2 * time.Second
	rates := []float64{50}
	if v := os.Getenv("LLMTAP_SHADOW_RATES"); v != "" {
		rates = nil
		for _, f := range strings.Fields(v) {
			r, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("LLMTAP_SHADOW_RATES: %v", err)
			}
			rates = append(rates, r)
		}
	}
	for _, rate := range rates {
		t.Run(fmt.Sprintf("rate=%v", rate), func(t *testing.T) {
			mock, err := mockllm.New(mockllm.Config{OutputTokens: 4, PromptCounter: mockllm.PromptApprox, LogLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			up := serveOn(t, mock)
			p, _ := loadShadowProxy(t, up, func(site string) string {
				return fmt.Sprintf(`	llmtap {
		shadow bench {
			url http://%s/v1/chat/completions
			model m
			rate %v
			arrival constant
			isl 16
			osl 4
			streaming off
			max_in_flight 1024
			duration %v
		}
	}`, site, rate, dur)
			})
			s := p.shadowStatus(t).one(t)
			waitUntil(t, dur+15*time.Second, "the shadow load to finish", func() bool {
				s = p.shadowStatus(t).one(t)
				return s.State == "done" && !s.Draining && s.InFlight == 0
			})
			arr := mock.Arrivals()
			shadowRate, _ := gapStats(arr)

			n0 := len(arr)
			body := []byte(`{"model":"m","stream":false,"max_tokens":4,"messages":[{"role":"user","content":"hello there"}]}`)
			tr := &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}
			defer tr.CloseIdleConnections()
			c := loadgen.Run(context.Background(), loadgen.Config{
				Arrivals: loadgen.NewConstant(rate), Duration: dur, MaxInFlight: 1024,
				Request: loadgen.ChatRequest(p.sites[0]+"/v1/chat/completions", body),
				Client:  &http.Client{Transport: tr},
			})
			anchorRate, _ := gapStats(mock.Arrivals()[n0:])
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			t.Logf("rate %v/s for %v: shadow inside Caddy sent %d (dropped %d), %.2f/s at the mock (%.4f of configured), lag p50 %.3f p99 %.3f max %.3f ms; "+
				"anchor loadgen.Run sent %d (dropped %d), %.2f/s (%.4f), lag p50 %.3f p99 %.3f max %.3f ms",
				rate, dur, s.Sent, s.Dropped, shadowRate, shadowRate/rate, s.LagP50Ms, s.LagP99Ms, s.LagMaxMs,
				c.Sent, c.Dropped, anchorRate, anchorRate/rate, ms(c.Lag.P50), ms(c.Lag.P99), ms(c.Lag.Max))
			if shadowRate/rate < anchorRate/rate-0.1 || s.Dropped > c.Dropped+int64(rate/20) {
				t.Errorf("the shadow load achieved %.4f of its rate (dropped %d), the anchor %.4f (dropped %d)", shadowRate/rate, s.Dropped, anchorRate/rate, c.Dropped)
			}
		})
	}
}
