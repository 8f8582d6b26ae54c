package llmtap_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// liveLoad sends streaming chat requests from four clients, one after another with a short
// pause, until stop is called.
func liveLoad(t *testing.T, url string) (stop func()) {
	c := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				_, _, _ = testkit.PostJSON(ctx, c, url, fmt.Sprintf("live-%d-%d", w, i), chatBody("live-m", 4, true, true))
				select {
				case <-ctx.Done():
				case <-time.After(15 * time.Millisecond):
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

func TestShadowGuardRails(t *testing.T) {
	// The mock degrades during the test (its time to first token jumps from 5 ms to 1.2 s,
	// against a limit of 600 ms: a loaded two-core machine under the race detector stalls a
	// fast request for a few hundred ms now and then): the guard rails pause the shadow load
	// (and mirroring) within the window, live TTFT recovers when the mock does, and the shadow
	// load resumes after the cool-down. Then the upstream answers 429: that alone pauses it
	// again.
	fastCfg := shadowMock()
	slowCfg := shadowMock()
	slowCfg.TTFT = 1200 * time.Millisecond
	fast, err := mock.New(fastCfg)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := mock.New(slowCfg)
	if err != nil {
		t.Fatal(err)
	}
	ml := &markerLog{}
	ml.set(fast)
	up := testkit.Serve(t, ml)
	const window, cooldown = time.Second, 1500 * time.Millisecond
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		guard {
			window %v
			ttft_p99 600ms
			min_requests 2
			cooldown %v
		}
		shadow g {
			url http://%s/v1/chat/completions
			model shadow-m
			rate 10
			isl 16
			osl 8
		}
	}`, window, cooldown, site)
	})
	pauses0 := p.metricValue(t, "llmtap_shadow_guard_pauses_total", map[string]string{"reason": "live_ttft_p99"})
	stopLive := liveLoad(t, p.sites[0]+"/v1/chat/completions")
	defer stopLive()

	time.Sleep(window + 200*time.Millisecond)
	st := p.shadowStatus(t)
	if s := st.one(t); s.State != "running" || st.Guard == nil || st.Guard.Tripped {
		t.Fatalf("with a healthy upstream: shadow %+v, guard %+v", s, st.Guard)
	}

	degraded := time.Now()
	ml.set(slow)
	// The first slow response shows its TTFT 1.2 s after the degradation; the pause must follow
	// within the window (plus slack for a loaded machine).
	waitUntil(t, slowCfg.TTFT+window+2*time.Second, "the guard rails to pause the shadow load after the upstream degraded", func() bool {
		return p.shadowStatus(t).one(t).State == "paused"
	})
	pausedAfter := time.Since(degraded)
	st = p.shadowStatus(t)
	t.Logf("paused %v after the degradation (window %v): %s; live p99 %.0f ms over %d requests",
		pausedAfter.Round(time.Millisecond), window, st.Guard.Reason, st.Guard.LiveTTFTP99Ms, st.Guard.LiveRequests)
	if !st.Guard.Tripped || !strings.HasPrefix(st.Guard.Reason, "live_ttft_p99") || st.one(t).Pauses < 1 {
		t.Fatalf("guard %+v, shadow %+v", st.Guard, st.one(t))
	}
	if !llmtap.MirrorGate().Paused() {
		t.Error("the guard rails did not pause mirroring")
	}
	// While paused, no shadow request is sent (one released just before the pause may be on
	// its way).
	time.Sleep(100 * time.Millisecond)
	n := p.shadowStatus(t).one(t).Sent
	time.Sleep(500 * time.Millisecond)
	if m := p.shadowStatus(t).one(t).Sent; m != n {
		t.Fatalf("the paused shadow load sent %d requests", m-n)
	}

	recovered := time.Now()
	ml.set(fast)
	waitUntil(t, window+cooldown+5*time.Second, "the shadow load to resume after the cool-down", func() bool {
		return p.shadowStatus(t).one(t).State == "running"
	})
	resumedAfter := time.Since(recovered)
	st = p.shadowStatus(t)
	t.Logf("resumed %v after the upstream recovered (the slow requests leave the %v window, then the %v cool-down); live p99 now %.0f ms",
		resumedAfter.Round(time.Millisecond), window, cooldown, st.Guard.LiveTTFTP99Ms)
	if resumedAfter < cooldown {
		t.Errorf("resumed %v after the recovery, before the %v cool-down", resumedAfter, cooldown)
	}
	if st.Guard.Tripped || st.Guard.LiveTTFTP99Ms >= 600 || st.one(t).Resumes < 1 || llmtap.MirrorGate().Paused() {
		t.Fatalf("after the recovery: guard %+v, shadow %+v, mirror paused %v", st.Guard, st.one(t), llmtap.MirrorGate().Paused())
	}
	// A loaded machine can add a pause of its own (a scheduling stall of hundreds of ms is a
	// slow live request too), so at least one.
	if got, pauses := p.metricValue(t, "llmtap_shadow_guard_pauses_total", map[string]string{"reason": "live_ttft_p99"})-pauses0, st.one(t).Pauses; got < 1 || got != float64(pauses) {
		t.Errorf("llmtap_shadow_guard_pauses_total{reason=live_ttft_p99} rose by %v; the load counted %d pauses", got, pauses)
	}

	// 429s pause it again.
	ml.status429.Store(true)
	waitUntil(t, 5*time.Second, "429s to pause the shadow load", func() bool {
		st := p.shadowStatus(t)
		return st.one(t).State == "paused" && strings.HasPrefix(st.Guard.Reason, "upstream_status 429")
	})
	ml.status429.Store(false)
}
