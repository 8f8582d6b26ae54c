package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// TestDashboardBasicConfig opens the dashboard in Chromium on the README's basic config: a
// site with llmtap and reverse_proxy and nothing else (no origins block for the admin
// listener, which refuses the typed URL). The dashboard listener serves it: the page must load
// from a typed URL and fill its charts and table from that listener alone.
func TestDashboardBasicConfig(t *testing.T) {
	dash, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(llmtap.DashboardEnv, dash)
	// The README's basic config: llmtap and reverse_proxy, nothing for the admin listener
	// beyond a free port (startCaddy's global block keeps Caddy's state in the test's folder).
	p := startCaddy(t, startMock(t), "", "", false)
	admin, site := p.admin, p.site

	ctx, stop := context.WithCancel(context.Background())
	wait := load(ctx, t, site, 2, 2000)
	defer func() { stop(); wait() }()

	b := newBrowser(t)
	tctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	// The dashboard listener, by the address the log names.
	if err := chromedp.Do(tctx, chromedp.Navigate("http://"+dash+"/")); err != nil {
		t.Fatalf("opening http://%s/: %v", dash, err)
	}
	ready := `Number(document.body.dataset.points) >= 3 && document.querySelectorAll("#slowest tbody tr").length > 0`
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("the dashboard did not fill: %v\n%.300s", err, body)
	}
	reqRate, err := chromedp.Run(tctx, chromedp.Evaluate[float64](`shown.map((p) => (p.groups.live || {}).req_rate).filter((v) => v != null).pop() || 0`))
	if err != nil {
		t.Fatal(err)
	}
	if !(reqRate > 0) {
		t.Errorf("request rate on the dashboard is %v while load runs", reqRate)
	}
	b.screenshot(t, "dashboard-basic.png")
	b.check(t, func(u *url.URL) bool {
		return u.Scheme == "data" || (u.Scheme == "http" && u.Host == dash)
	})
	// The admin listener, after the dashboard was checked: what a user got before, Caddy's
	// refusal (logged only, for whoever updates Caddy).
	if err := chromedp.Do(tctx, chromedp.Navigate("http://"+admin+"/llmtap/ui/")); err != nil {
		t.Fatal(err)
	}
	refused, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refused, "not allowed to access from origin") {
		t.Logf("the admin listener answered a typed URL with %q (Caddy's origin check changed?)", refused)
	}
}
