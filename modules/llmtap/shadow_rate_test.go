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

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
)

// TestShadowRateAccuracy measures how exactly a shadow load inside Caddy keeps a constant
// rate, against an anchor measured in the same run: the same schedule sent by gen.Run
// directly (from the test, not the app) through the same site to the same mock. The figures
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
			mock, err := mock.New(mock.Config{OutputTokens: 4, PromptCounter: mock.PromptApprox, LogLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			up := testkit.Serve(t, mock)
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
				return s.State == "done" && !s.Draining && s.InFlight == 0 && s.OK+s.Errors == s.Sent
			})
			arr := mock.Arrivals()
			shadowRate, _ := gapStats(arr)

			n0 := len(arr)
			body := []byte(`{"model":"m","stream":false,"max_tokens":4,"messages":[{"role":"user","content":"hello there"}]}`)
			tr := &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}
			defer tr.CloseIdleConnections()
			c := gen.Run(context.Background(), gen.Config{
				Arrivals: gen.NewConstant(rate), Duration: dur, MaxInFlight: 1024,
				Request: gen.ChatRequest(p.sites[0]+"/v1/chat/completions", body),
				Client:  &http.Client{Transport: tr},
			})
			anchorRate, _ := gapStats(mock.Arrivals()[n0:])
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			t.Logf("rate %v/s for %v: shadow inside Caddy sent %d (dropped %d), %.2f/s at the mock (%.4f of configured), lag p50 %.3f p99 %.3f max %.3f ms; "+
				"anchor gen.Run sent %d (dropped %d), %.2f/s (%.4f), lag p50 %.3f p99 %.3f max %.3f ms",
				rate, dur, s.Sent, s.Dropped, shadowRate, shadowRate/rate, s.LagP50Ms, s.LagP99Ms, s.LagMaxMs,
				c.Sent, c.Dropped, anchorRate, anchorRate/rate, ms(c.Lag.P50), ms(c.Lag.P99), ms(c.Lag.Max))
			// Timing on a shared machine is a figure, not a test: stalls of hundreds of ms hit
			// either run. What must hold is that the shadow load sent its schedule, every
			// request ended and every successful one reached the mock, and it dropped no more
			// than the anchor did.
			want := int64(rate * dur.Seconds())
			// (A stall of the generator can leave the last few arrivals unreleased when the
			// duration ends: the load ends at its end, on the wall clock.)
			if s.Sent+s.Dropped > want || s.Sent < want*9/10 || int64(n0) < s.OK || s.Dropped > c.Dropped {
				t.Errorf("the shadow load sent %d and dropped %d of the %d its schedule holds (the mock saw %d); the anchor dropped %d", s.Sent, s.Dropped, want, n0, c.Dropped)
			}
		})
	}
}
