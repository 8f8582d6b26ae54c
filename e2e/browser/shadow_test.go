package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmtap/llmtap/internal/testkit"
)

// shadowStatus is the part of GET /llmtap/shadow the test reads.
type shadowStatus struct {
	Shadows []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Sent  int64  `json:"sent"`
	} `json:"shadows"`
}

func shadowOf(t *testing.T, admin, name string) (state string, sent int64) {
	t.Helper()
	var st shadowStatus
	testkit.GetJSON(t, "http://"+admin+"/llmtap/shadow", &st)
	for _, s := range st.Shadows {
		if s.Name == name {
			return s.State, s.Sent
		}
	}
	t.Fatalf("no shadow load %q in %+v", name, st)
	return "", 0
}

// TestDashboardShadowControls starts a shadow load from the dashboard's Start button, sees its
// traffic reach the charts as the shadow class, stops it with Stop, and checks on the server
// that it sent while started and nothing after it stopped.
func TestDashboardShadowControls(t *testing.T) {
	const globals = `	llmtap {
		shadow s1 {
			url http://{site}/v1/chat/completions
			model m1
			rate 20
			osl 16
			max_in_flight 8
			stopped
		}
	}`
	p := startProxy(t, startMock(t), globals, "")
	if state, sent := shadowOf(t, p.admin, "s1"); state != "stopped" || sent != 0 {
		t.Fatalf("before the test the load is %s with %d sent, want stopped with none", state, sent)
	}
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	row := `#shadow-loads tr[data-name="s1"]`
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			b.check(t, func(*url.URL) bool { return true })
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+p.admin+"/llmtap/ui/")); err != nil {
		t.Fatal(err)
	}
	poll("the stopped load is listed", `document.querySelector('`+row+`')?.dataset.state === "stopped"`)

	if err := chromedp.Do(ctx, chromedp.Click(row+" button.start")); err != nil {
		t.Fatal(err)
	}
	poll("the load runs and its traffic is charted as the shadow class",
		`document.querySelector('`+row+`').dataset.state === "running" && shown.some((p) => p.groups.shadow && p.groups.shadow.req_rate > 0)`)
	if state, sent := shadowOf(t, p.admin, "s1"); state != "running" || sent == 0 {
		t.Errorf("after Start the server has the load %s with %d sent", state, sent)
	}

	// Set rate above max_rate (it defaults to the configured 20): the error stays beside the
	// controls (it flashed for under a second in the status line), nothing is sent; then a
	// rate within it reaches the server and clears the error (issue 34).
	setRate := func(v string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.SetValue(row+" input.rate", v)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(row+" button.set-rate")); err != nil {
			t.Fatal(err)
		}
	}
	setRate("30")
	poll("the error is shown", `document.querySelector('`+row+` .ctl-error').textContent.includes("max_rate 20")`)
	time.Sleep(2500 * time.Millisecond) // two refreshes of the status line and the table
	shownErr, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+row+` .ctl-error').textContent`))
	if err != nil || !strings.Contains(shownErr, "above this load's max_rate 20") {
		t.Errorf("after 2.5 s the control's error reads %q (%v)", shownErr, err)
	}
	setRate("10")
	poll("the rate is set and the error cleared", `document.querySelector('`+row+` .ctl-error').textContent === "" && document.querySelector('`+row+`').cells[3].textContent === "10"`)

	if err := chromedp.Do(ctx, chromedp.Click(row+" button.stop")); err != nil {
		t.Fatal(err)
	}
	poll("the load stops", `document.querySelector('`+row+`').dataset.state === "stopped"`)
	_, sent := shadowOf(t, p.admin, "s1")
	time.Sleep(time.Second) // 20 arrivals at its rate, had it not stopped
	if state, again := shadowOf(t, p.admin, "s1"); state != "stopped" || again != sent {
		t.Errorf("after Stop the load is %s and sent %d more", state, again-sent)
	}
	b.screenshot(t, "dashboard-shadow.png")
	b.check(t, func(u *url.URL) bool {
		return u.Scheme == "data" || (u.Scheme == "http" && u.Host == p.admin)
	})
}
