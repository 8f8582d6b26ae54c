package commands

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/record"
)

// canarySLOTTFT is the TTFT threshold, in ms, of the handler's SLO in TestReportCanaryAndSLO:
// between the live first token (500 ms) and the mirror's (550 ms).
const canarySLOTTFT = 525

// TestReportCanaryAndSLO records live traffic mirrored to a mock 20 % slower through real
// Caddy (recorder and mirror on, two tenants), reads the canary verdict from GET
// /llmtap/mirror, then runs `llmtap report` over the records: its offline verdict is the one
// the proxy gave (worse; the same pairs, comparisons and intervals, the SLO attainment of each
// side by the handler's SLO included), and its SLO attainment per
// class, model and tenant equals a count over the records, with a TTFT threshold at the live
// median so that the count is not all or nothing.
func TestReportCanaryAndSLO(t *testing.T) {
	const n = 400
	// A first token long against a busy machine's stalls: they add to both sides and bring
	// the ratio of a slower mirror towards 1 (with 200 ms, 32 streams and the race detector on
	// two busy cores, 10 % slower came to 1.06); 20 % stays clear of the 10 % margin.
	base := mock.Config{Model: "canary-model", TTFT: 500 * time.Millisecond, ITL: 10 * time.Millisecond, OutputTokens: 8, Seed: 1}
	slower := base
	slower.TTFT, slower.ITL = 600*time.Millisecond, 12*time.Millisecond
	_, liveURL := testkit.StartMock(t, base)
	_, mirrorURL := testkit.StartMock(t, slower)
	recDir := t.TempDir()
	verdict := map[string]any{"first_look": n, "looks": 1}
	admin, site := mirrorProxy(t, liveURL, mirrorURL, verdict, map[string]any{
		"record": map[string]any{"dir": recDir, "files": []string{"records"}},
		"tenant": map[string]any{"from": "header", "name": "X-Tenant"},
		// The handler's SLO judges both sides of each pair (the verdict's slo_attainment);
		// the report judges the records by the same thresholds below.
		"slo": []any{map[string]any{"ttft_ms": canarySLOTTFT, "latency_ms": 1000}},
	})
	postMany(t, site, n, 16, func(i int, h http.Header) { h.Set("X-Tenant", []string{"team-a", "team-b"}[i%2]) })

	// The proxy's verdict, once every copy has been paired.
	var doc struct {
		Pairs    mirror.Summary        `json:"pairs"`
		Verdicts []mirror.ModelVerdict `json:"verdicts"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		testkit.GetJSON(t, "http://"+admin+"/llmtap/mirror", &doc)
		if doc.Pairs.Pairs >= n && len(doc.Verdicts) == 1 && doc.Verdicts[0].Outcome != mirror.VerdictNotEnough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no verdict over %d pairs from GET /llmtap/mirror: %+v", n, doc)
		}
	}
	live := doc.Verdicts[0]
	if live.Outcome != mirror.VerdictWorse || live.Pairs != n {
		t.Fatalf("GET /llmtap/mirror: %s, want worse over %d pairs", live.Verdict, n)
	}
	if err := caddy.Stop(); err != nil { // the recorder writes its last records
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(recDir, "records-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files %v, want one", files)
	}
	run, err := report.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var liveTTFT []float64
	for _, r := range run.Records {
		if r.Class == record.ClassLive && r.TTFTMs != nil {
			liveTTFT = append(liveTTFT, *r.TTFTMs)
		}
	}
	slices.Sort(liveTTFT)
	if len(liveTTFT) != n || len(run.Records) != 2*n {
		t.Fatalf("%d records, %d live with a TTFT; want %d live and %d mirror", len(run.Records), len(liveTTFT), n, n)
	}
	threshold := liveTTFT[n/2]

	out := t.TempDir()
	jsonOut, html := filepath.Join(out, "d.json"), filepath.Join(out, "r.html")
	vj, _ := json.Marshal(verdict)
	code, stdout := runReportArgs(t, files[0], "-o", html, "--canary-verdict", string(vj),
		"--slo", fmt.Sprintf("time_to_first_token:%v request_latency:1000", threshold), "--json", jsonOut)
	if code != 0 {
		t.Fatalf("report exited %d:\n%s", code, stdout)
	}
	t.Logf("report:\n%s", stdout)
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var d report.Decisions
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}

	// The canary: the proxy's verdict, comparison for comparison, the SLO attainment of each
	// side by the handler's SLO included (a report with the same thresholds).
	canaryOut := filepath.Join(out, "canary.json")
	if code, stdout := runReportArgs(t, files[0], "-o", filepath.Join(out, "canary.html"), "--canary-verdict", string(vj),
		"--slo", fmt.Sprintf("time_to_first_token:%d request_latency:1000", canarySLOTTFT), "--json", canaryOut); code != 0 {
		t.Fatalf("report exited %d:\n%s", code, stdout)
	}
	var dc report.Decisions
	if raw, err := os.ReadFile(canaryOut); err != nil || json.Unmarshal(raw, &dc) != nil {
		t.Fatalf("%s: %v", canaryOut, err)
	}
	if len(dc.Canary) != 1 {
		t.Fatalf("report canary rows %+v, want one model", dc.Canary)
	}
	got := dc.Canary[0]
	if c := got.Comparisons[len(got.Comparisons)-1]; c.Name != mirror.SLOAttainment || c.Count != n {
		t.Errorf("the report's last comparison %+v: want the SLO attainment over %d pairs", c, n)
	}
	// The intervals' variance is by batches over the order the pairs were made in, which the
	// records give up to exchanges that ended in the same instant: the ends may differ by a
	// swap of neighbours across a batch boundary, everything else is equal.
	near := func(a, b float64) bool { return a == b || math.Abs(a-b) <= 0.01*math.Max(math.Abs(a), math.Abs(b)) }
	strip := func(v mirror.ModelVerdict) mirror.ModelVerdict {
		v.Comparisons = slices.Clone(v.Comparisons)
		for i := range v.Comparisons {
			v.Comparisons[i].Low, v.Comparisons[i].High = 0, 0
		}
		return v
	}
	if !reflect.DeepEqual(strip(got.ModelVerdict), strip(live)) || len(got.Comparisons) != len(live.Comparisons) {
		t.Errorf("report's verdict differs from GET /llmtap/mirror's:\nreport %+v %+v\nproxy  %+v %+v", got.ModelVerdict, got.Comparisons, live, live.Comparisons)
	} else {
		for i, c := range got.Comparisons {
			if l := live.Comparisons[i]; !near(c.Low, l.Low) || !near(c.High, l.High) {
				t.Errorf("%s: report's interval [%v, %v], the proxy's [%v, %v]", c.Name, c.Low, c.High, l.Low, l.High)
			}
		}
	}
	if got.Live != n || got.Paired != n {
		t.Errorf("report: %d of %d live requests paired, want %d of %d", got.Paired, got.Live, n, n)
	}
	if !strings.Contains(stdout, "canary-model: worse over 400 pairs") {
		t.Errorf("the printed report has no worse verdict:\n%s", stdout)
	}

	// The SLO attainment: a count over the records.
	type key struct{ class, tenant string }
	want := map[key][3]int{} // requests, TTFT met, all met
	for _, r := range run.Records {
		k := key{r.Class, r.Tenant}
		w := want[k]
		w[0]++
		ttft := r.OK() && r.TTFTMs != nil && *r.TTFTMs <= threshold
		lat := r.OK() && r.RequestLatencyMs != nil && *r.RequestLatencyMs <= 1000
		if ttft {
			w[1]++
		}
		if ttft && lat {
			w[2]++
		}
		want[k] = w
	}
	// Live requests of two tenants; the copies carry no tenant.
	if len(d.SLO) != len(want) || len(want) != 3 {
		t.Fatalf("report SLO rows %+v, want one per class and tenant: %v", d.SLO, want)
	}
	for _, row := range d.SLO {
		w := want[key{row.Class, row.Tenant}]
		if row.Model != "canary-model" || row.Requests != w[0] || row.Met["time_to_first_token"] != w[1] || row.Good != w[2] ||
			row.Attainment["all"] != float64(w[2])/float64(w[0]) {
			t.Errorf("SLO row %+v, want %d requests, %d meeting the TTFT, %d all", row, w[0], w[1], w[2])
		}
		if row.Class == record.ClassLive && (row.Good == 0 || row.Good == row.Requests) {
			t.Errorf("live SLO row %+v: a threshold at the median should split the requests", row)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`<table id="canary">`, `<td class="verdict">worse</td>`, `<table id="slo">`} {
		if !strings.Contains(string(page), s) {
			t.Errorf("the HTML report lacks %s", s)
		}
	}
}
