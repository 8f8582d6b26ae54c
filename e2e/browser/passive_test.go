package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/headroom"
)

// TestDashboardPassiveHeadroom drives a mock with a capacity model (2 slots, a queue beyond
// them, its KV cache and queue on its scraped /metrics page) through rising live load, 1 to 6
// clients of 4 requests each, with passive_headroom on the handler, opens the dashboard and
// checks that its shadow area shows the passive estimate of GET /llmtap/shadow figure for
// figure: the objective, the state, the requests, the knee, the concurrency and rate at the
// objective with their intervals, the current rate and what remains, queue onset, KV limit
// and KV usage.
func TestDashboardPassiveHeadroom(t *testing.T) {
	cfg := mock.Config{Model: "m1", TTFT: 60 * time.Millisecond, ITL: 10 * time.Millisecond, OutputTokens: 8, Slots: 2, KVCacheTokens: 400}
	_, upURL := testkit.StartMock(t, cfg)
	up := strings.TrimPrefix(upURL, "http://")
	globals := fmt.Sprintf("\tllmtap {\n\t\tscrape http://%s/metrics {\n\t\t\tinterval 200ms\n\t\t}\n\t}", up)
	p := startProxy(t, up, globals, "\t\tpassive_headroom {\n\t\t\tttft 250ms\n\t\t\twindow 1s\n\t\t\twindows 120\n\t\t}")

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	sent := 0
	for clients := 1; clients <= 6; clients++ {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range 4 {
					if err := send(context.Background(), client, p.site, "m1", 8); err != nil {
						t.Errorf("request through the proxy: %v", err)
					}
				}
			})
		}
		wg.Wait()
		sent += 4 * clients
	}
	type doc struct {
		Passive []headroom.Estimate `json:"passive_headroom"`
	}
	var before doc
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		testkit.GetJSON(t, "http://"+p.admin+"/llmtap/shadow", &before)
		if len(before.Passive) == 1 && before.Passive[0].Requests == int64(sent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /llmtap/shadow has no passive estimate of %d requests: %+v", sent, before)
		}
	}

	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+p.admin+"/llmtap/ui/")); err != nil {
		t.Fatal(err)
	}
	ready := fmt.Sprintf(`(() => { const r = document.querySelector('#passive tbody tr'); return !!r && r.cells[3].textContent === "%d"; })()`, sent)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.check(t, func(*url.URL) bool { return true })
		t.Fatalf("the passive headroom table did not fill: %v", err)
	}
	// The estimate is refitted every window (its intervals by a bootstrap): the page's figures
	// are compared with the route's when two reads of the route around a refresh of the
	// page agree (no refit between them).
	var shown [][]string
	var e headroom.Estimate
	same := false
	for try := 0; try < 10 && !same; try++ {
		var a, z doc
		testkit.GetJSON(t, "http://"+p.admin+"/llmtap/shadow", &a)
		var err error
		if _, err = chromedp.Run(ctx, chromedp.Evaluate[any](`refreshShadow().then(() => true)`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise)); err != nil {
			t.Fatal(err)
		}
		if shown, err = chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#passive tbody tr")].map((r) => [...r.cells].map((c) => c.textContent))`)); err != nil {
			t.Fatal(err)
		}
		testkit.GetJSON(t, "http://"+p.admin+"/llmtap/shadow", &z)
		same = len(a.Passive) == 1 && reflect.DeepEqual(a.Passive, z.Passive)
		if same {
			e = a.Passive[0]
		}
	}
	if !same {
		t.Fatal("the estimate was refitted between every two reads of the route")
	}
	t.Logf("passive headroom panel %q", shown)
	t.Logf("route: state %s, knee %.3g, SLO concurrency %v, queue onset %v, kv limit %v", e.State, e.KneeConcurrency, fmtIv(e.SLOConcurrency), fmtNum(e.QueueOnsetConcurrency), fmtNum(e.KVLimitConcurrency))
	if len(shown) != 1 || len(shown[0]) != 12 {
		t.Fatalf("passive headroom panel %q, want one row of 12 cells", shown)
	}
	row := shown[0]
	want := []string{e.Upstream, num3(e.TTFTObjectiveMs), e.State, strconv.FormatInt(e.Requests, 10), num3(e.KneeConcurrency),
		fmtIv(e.SLOConcurrency), fmtIv(e.SLORequestsPerSec), num3(e.CurrentRequestsPerSec), fmtIv(e.RemainingRequestsPerSec),
		fmtNum(e.QueueOnsetConcurrency), fmtNum(e.KVLimitConcurrency), fmtNum(e.KVCacheUsage)}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("passive headroom panel cell %d: shown %q, the route's %q", i, row[i], want[i])
		}
	}
	if e.Upstream != up || e.TTFTObjectiveMs != 250 || e.State == "collecting" || e.KneeConcurrency <= 0 {
		t.Errorf("the route's estimate %+v: want a fit of %s under 250 ms", e, up)
	}
	b.screenshot(t, "dashboard-passive.png")
	b.check(t, func(u *url.URL) bool {
		return u.Scheme == "data" || (u.Scheme == "http" && u.Host == p.admin)
	})
}

// num3 writes v as the dashboard does: 3 significant digits, no exponent.
func num3(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func fmtNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return num3(*v)
}

func fmtIv(i headroom.Interval) string {
	if i.Estimate == nil {
		if i.Low != nil {
			return "≥ " + num3(*i.Low)
		}
		return "∞"
	}
	high := "∞"
	if i.High != nil {
		high = num3(*i.High)
	}
	return fmt.Sprintf("%s [%s, %s]", num3(*i.Estimate), fmtNum(i.Low), high)
}
