package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmtap/llmtap/internal/pngcheck"
	"github.com/llmtap/llmtap/report"
)

// TestReport records a demo-like run through real Caddy (the handler's recorder writing
// records to a folder), writes its report and PNG charts, opens the report from the file in
// Chromium and checks that every chart rendered with no console error and no request, and
// that every PNG is an image of the size asked for with something drawn on it.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	// The llmtap app runs a timeline fed by a dcgm-exporter page; its windows are written beside
	// the records half a second after they end, so the report has GPU charts from a real file.
	globals := fmt.Sprintf("\tllmtap {\n\t\tgpu off\n\t\tscrape http://%s/metrics {\n\t\t\tkind dcgm\n\t\t\tinterval 200ms\n\t\t}\n\t\ttimeline {\n\t\t\tsettle 500ms\n\t\t}\n\t}", dcgmPage(t))
	p := startProxy(t, startMock(t), globals, "\t\trecord "+dir+" {\n\t\t\tflush_interval 100ms\n\t\t}")
	const requests = 80
	ok := load(context.Background(), t, p.site, 4, requests)()
	if ok != requests {
		t.Fatalf("%d of %d requests succeeded", ok, requests)
	}
	// Two requests the mock refuses (max_tokens past its limit): errors in the report.
	for range 2 {
		resp, err := http.Post("http://"+p.site+"/v1/chat/completions", "application/json", strings.NewReader(chatBody("m1", 1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("oversized request: status %d, want 400", resp.StatusCode)
		}
	}

	// The recorder writes off the request path, the timeline once a window is final: wait for
	// every record, and for the window of the last one, to reach the files.
	var run *report.Run
	end := time.Now()
	deadline := end.Add(10 * time.Second)
	for {
		r, err := report.Load(dir)
		if err == nil && len(r.Records) == requests+2 && len(r.Timeline) > 0 && r.Timeline[len(r.Timeline)-1].Start.Add(time.Second).After(end) {
			run = r
			break
		}
		if time.Now().After(deadline) {
			n, w := 0, 0
			if r != nil {
				n, w = len(r.Records), len(r.Timeline)
			}
			t.Fatalf("after 10 s the recording holds %d records (want %d) and %d timeline windows with GPUs (%v)", n, requests+2, w, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if run.Skipped != 0 {
		t.Errorf("%d record lines skipped: %v", run.Skipped, run.Warnings)
	}
	rep, err := report.Build(run)
	if err != nil {
		t.Fatal(err)
	}
	charts := rep.Charts()
	gpuCharts := 0
	for _, c := range charts {
		if strings.HasPrefix(c.ID, "gpu_") {
			gpuCharts++
			if len(c.Series) != 2 {
				t.Errorf("chart %s has %d series, want the page's 2 GPUs", c.ID, len(c.Series))
			}
		}
	}
	if gpuCharts != 2 {
		t.Errorf("%d GPU charts, want utilization and power", gpuCharts)
	}
	out := t.TempDir()
	html := filepath.Join(out, "report.html")
	f, err := os.Create(html)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	const w, h = 320, 160
	files, err := rep.WritePNGs(filepath.Join(out, "png"), w, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(charts) {
		t.Errorf("%d PNG files for %d charts", len(files), len(charts))
	}
	for _, file := range files {
		if err := pngcheck.Check(file, w, h); err != nil {
			t.Error(err)
		}
	}

	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html)); err != nil {
		t.Fatal(err)
	}
	rendered, err := chromedp.Run(ctx, chromedp.Poll[string](`document.body.dataset.rendered`, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		b.check(t, func(*url.URL) bool { return true })
		t.Fatalf("the report did not render: %v", err)
	}
	// Every chart is drawn, none of them empty.
	empty, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart text.empty").length`))
	if err != nil {
		t.Fatal(err)
	}
	if rendered != strconv.Itoa(len(charts)) || empty != 0 {
		t.Errorf("%s charts rendered (%d empty), want %d", rendered, empty, len(charts))
	}
	// The summary names the successful and the failed requests.
	summary, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("summary").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary, "2xx\t80\t0") || !strings.Contains(summary, "4xx\t0\t2") {
		t.Errorf("summary table:\n%s", summary)
	}
	b.screenshot(t, "report.png")
	b.check(t, func(u *url.URL) bool { return u.Scheme == "file" || u.Scheme == "data" })
}
