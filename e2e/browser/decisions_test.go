package browser

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// decisionPairs is the look the test's canary verdict is taken at.
const decisionPairs = 160

// TestDashboardDecisions mirrors live traffic through real Caddy to a mock whose first token
// comes 50 % later than the live one's (worse by far, so that a busy machine's stalls cannot
// hide it at the one look of 160 pairs), with an SLO on the handler, opens the dashboard, and checks that its canary panel
// shows the verdict of GET /llmtap/mirror (worse, the comparison that decided it, its ratio and
// interval, the pairs, the skipped share, the SLO attainment of each side) and its SLO panel every objective's attainment per
// window and the burn rates of GET /llmtap/slo, value for value.
func TestDashboardDecisions(t *testing.T) {
	// Times long against a busy machine's stalls, as in the canary tests of modules/commands.
	base := mock.Config{Model: "m1", TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, OutputTokens: 8, Seed: 1}
	slower := base
	slower.TTFT = 300 * time.Millisecond
	_, live := testkit.StartMock(t, base)
	_, mirrorURL := testkit.StartMock(t, slower)
	handler := fmt.Sprintf(`		mirror %s {
			sample 1
			max_in_flight 64
			verdict {
				first_look %d
				looks 1
			}
		}
		slo chat {
			ttft 210ms
			latency 2s
			target 99%%
		}`, mirrorURL, decisionPairs)
	p := startProxy(t, strings.TrimPrefix(live, "http://"), "", handler)

	// decisionPairs live requests, 16 at a time, each copied to the mirror.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for range next {
				if err := send(context.Background(), client, p.site, "m1", 8); err != nil {
					t.Errorf("request through the proxy: %v", err)
				}
			}
		})
	}
	for i := range decisionPairs {
		next <- i
	}
	close(next)
	wg.Wait()

	// The server's verdict once every copy is paired.
	var md struct {
		Counters mirror.Counters       `json:"counters"`
		Pairs    mirror.Summary        `json:"pairs"`
		Verdicts []mirror.ModelVerdict `json:"verdicts"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		testkit.GetJSON(t, "http://"+p.admin+"/llmtap/mirror", &md)
		if len(md.Verdicts) == 1 && md.Verdicts[0].Pairs == decisionPairs && md.Counters.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /llmtap/mirror has no verdict over %d pairs: %+v", decisionPairs, md)
		}
	}
	if v := md.Verdicts[0]; v.Outcome != mirror.VerdictWorse {
		t.Fatalf("a mirror 50 %% slower: %s, want worse; comparisons %+v", v.Verdict, v.Comparisons)
	}

	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+p.admin+"/llmtap/ui/")); err != nil {
		t.Fatal(err)
	}
	// Wait for the panels to show every pair and every request.
	ready := fmt.Sprintf(`(() => {
		const c = document.querySelector('#canary tbody tr[data-model="m1"]');
		const s = document.querySelector('#slo tbody tr[data-objective="all"]');
		return !!c && c.cells[6].textContent === "%d" && !!s && s.cells[5].textContent === "%d";
	})()`, decisionPairs, decisionPairs)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.check(t, func(*url.URL) bool { return true })
		t.Fatalf("the decision panels did not fill: %v", err)
	}
	type tables struct {
		Canary [][]string `json:"canary"`
		SLO    [][]string `json:"slo"`
		Head   []string   `json:"slo_head"`
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[tables](`(() => {
		const rows = (sel) => [...document.querySelectorAll(sel + " tbody tr")].map((r) => [...r.cells].map((c) => c.textContent));
		return {canary: rows("#canary"), slo: rows("#slo"), slo_head: [...document.querySelectorAll("#slo thead th")].map((h) => h.textContent)};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	// The routes again, after the page read them: nothing moves once the load has ended.
	testkit.GetJSON(t, "http://"+p.admin+"/llmtap/mirror", &md)
	var sd struct {
		SLOs []slo.Report `json:"slos"`
	}
	testkit.GetJSON(t, "http://"+p.admin+"/llmtap/slo", &sd)
	t.Logf("canary panel %q", shown.Canary)
	t.Logf("SLO panel %q %q", shown.Head, shown.SLO)

	// The canary panel: one row, the route's figures.
	v := md.Verdicts[0]
	var by mirror.MetricVerdict
	for _, m := range v.Comparisons {
		if m.Name == v.Diverged {
			by = m
		}
	}
	var skipped uint64
	for _, n := range md.Counters.Skipped {
		skipped += n
	}
	if len(shown.Canary) != 1 || len(shown.Canary[0]) != 12 {
		t.Fatalf("canary panel %q, want one row of 12 cells", shown.Canary)
	}
	// The SLO attainment of each side over the pairs (the handler's SLO judges both; the
	// mirror's TTFT of 300 ms misses 210 ms).
	var attain mirror.MetricVerdict
	for _, m := range v.Comparisons {
		if m.Name == mirror.SLOAttainment {
			attain = m
		}
	}
	attLive, attMirror, attOK := strings.Cut(shown.Canary[0][11], " / ")
	row := shown.Canary[0]
	soFar := 0
	for _, m := range md.Pairs.Models {
		if m.Model == "m1" {
			soFar = m.Pairs
		}
	}
	lo, hi, ok := strings.Cut(strings.Trim(row[4], "[]"), ", ")
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"model", row[0] == "m1"},
		{"verdict", row[1] == v.Outcome && row[1] == mirror.VerdictWorse},
		{"decided by", row[2] == v.Diverged && v.Diverged != ""},
		// A rate's comparison is a signed difference, said so; a quantile's a ratio.
		{"ratio or difference", by.Difference == strings.HasSuffix(row[3], " (difference)") &&
			near(strings.TrimPrefix(strings.TrimSuffix(row[3], " (difference)"), "+"), by.Estimate, 3)},
		{"interval", ok && near(lo, by.Low, 3) && near(hi, by.High, 3)},
		{"margin", near(row[5], by.Margin, 6)},
		{"pairs judged", row[6] == strconv.Itoa(v.Pairs)},
		{"pairs so far", row[7] == strconv.Itoa(soFar) && soFar >= decisionPairs},
		{"next look", row[8] == "–" && v.NextLookAt == 0},
		{"pairs needed (none once decided)", row[9] == "–"},
		{"SLO attainment live / mirror", attOK && attain.Count == v.Pairs && attain.Other < attain.Base &&
			near(strings.TrimSuffix(attLive, "%"), 100*attain.Base, 2) && near(strings.TrimSuffix(attMirror, "%"), 100*attain.Other, 2)},
		{"skipped", strings.HasSuffix(row[10], "%") && near(strings.TrimSuffix(row[10], "%"), 100*float64(skipped)/float64(md.Counters.Sampled), 2)},
	} {
		if !c.ok {
			t.Errorf("canary panel %s: row %q, route verdict %s, deciding comparison %+v, counters %+v", c.what, row, v.Verdict, by, md.Counters)
		}
	}

	// The SLO panel: one row per objective of the one (SLO, model), each window's attainment
	// and the burn rates on the row of all.
	if len(sd.SLOs) != 1 || sd.SLOs[0].Total.Requests != decisionPairs {
		t.Fatalf("GET /llmtap/slo: %+v, want one series of %d requests", sd.SLOs, decisionPairs)
	}
	rep := sd.SLOs[0]
	// Every live request was copied and paired: the verdict's live attainment is the SLO
	// route's, by the one goodput rule.
	if want := rep.Total.Attainment[slo.ObjAll]; math.Abs(attain.Base-want) > 1e-12 {
		t.Errorf("the verdict's live SLO attainment %v, GET /llmtap/slo's %v", attain.Base, want)
	}
	spans := append(append([]slo.Window{}, rep.Windows...), rep.Total)
	objs := []string{slo.ObjLatency, slo.ObjTTFT, slo.ObjAll}
	if len(shown.SLO) != len(objs) {
		t.Fatalf("SLO panel %q, want a row per objective %v", shown.SLO, objs)
	}
	if want := 6 + 2*len(spans); len(shown.Head) != want || shown.Head[6] != "attained "+rep.Windows[0].Window {
		t.Errorf("SLO panel head %q, want %d columns, the windows of the route first", shown.Head, want)
	}
	thresholds := map[string]float64{slo.ObjTTFT: rep.Thresholds.TTFTMs, slo.ObjLatency: rep.Thresholds.LatencyMs}
	varied := false
	for i, obj := range objs {
		r := shown.SLO[i]
		if len(r) != len(shown.Head) || r[0] != "chat" || r[1] != "m1" || r[2] != obj || r[5] != strconv.FormatUint(rep.Total.Requests, 10) ||
			!near(strings.TrimSuffix(r[4], "%"), 100*rep.Target, 2) {
			t.Errorf("SLO panel row %q: want chat, m1, %s, target %v, %d requests", r, obj, rep.Target, rep.Total.Requests)
			continue
		}
		if th, ok := thresholds[obj]; ok && !near(r[3], th, 6) {
			t.Errorf("SLO panel row %q: threshold, want %v", r, th)
		}
		for j, w := range spans {
			a := w.Attainment[obj]
			varied = varied || (a > 0 && a < 1)
			if cell := r[6+j]; !near(strings.TrimSuffix(cell, "%"), 100*a, 2) {
				t.Errorf("SLO %s over %q: shown %q, route %v", obj, w.Window, cell, a)
			}
			burn := r[6+len(spans)+j]
			switch {
			case obj != slo.ObjAll && burn != "–":
				t.Errorf("SLO %s: a burn rate %q on an objective's own row", obj, burn)
			case obj == slo.ObjAll && (w.BurnRate == nil || !near(burn, *w.BurnRate, 2)):
				t.Errorf("SLO burn rate over %q: shown %q, route %v", w.Window, burn, w.BurnRate)
			}
		}
	}
	t.Logf("attainment between 0 and 1 somewhere: %v", varied)
	b.screenshot(t, "dashboard-decisions.png")
	b.check(t, func(u *url.URL) bool {
		return u.Scheme == "data" || (u.Scheme == "http" && u.Host == p.admin)
	})
}

// near reports whether shown, a number written with decimals digits, is want rounded there
// ("∞" and "−∞" stand for infinite ends).
func near(shown string, want float64, decimals int) bool {
	switch shown {
	case "∞":
		return math.IsInf(want, 1)
	case "−∞":
		return math.IsInf(want, -1)
	}
	v, err := strconv.ParseFloat(shown, 64)
	return err == nil && math.Abs(v-want) <= 0.5*math.Pow(10, -float64(decimals))*(1+1e-9)
}
