package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/pngcheck"
	"github.com/llmtap/llmtap/telemetry/record"
)

// rec builds a successful streamed record starting at off from base.
func rec(base time.Time, id string, off time.Duration, class, model string, ttft, itl float64, tokens int) *record.Record {
	gaps := make([]float64, tokens-1)
	for i := range gaps {
		gaps[i] = itl
	}
	lat := ttft + itl*float64(tokens-1)
	return &record.Record{RequestID: id, Class: class, Model: model, Status: 200, Start: base.Add(off), Stream: true,
		TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: &lat, DurationMs: lat + 1, InterChunkMs: gaps,
		OutputTokens: int64(tokens), OutputTokensSource: record.SourceUsage, UsageOutputTokens: int64(tokens)}
}

func writeRecords(t *testing.T, dir, name string, recs []*record.Record, extra ...string) {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// reportOf writes recs as one records file in a fresh folder and builds its report.
func reportOf(t *testing.T, recs []*record.Record) *Report {
	t.Helper()
	dir := t.TempDir()
	writeRecords(t, dir, "records-20260501T100000.000Z.jsonl", recs)
	return reportOfDir(t, dir)
}

// sampleReport builds the report of a fresh sampleRun.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	return reportOfDir(t, sampleRun(t))
}

// reportOfDir builds the report of the run in dir.
func reportOfDir(t *testing.T, dir string) *Report {
	t.Helper()
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(run)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// sampleRun writes three seconds of traffic: live requests each second and one failed shadow
// request, and returns the folder.
func sampleRun(t *testing.T) string {
	dir := t.TempDir()
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []*record.Record
	for i := range 30 {
		recs = append(recs, rec(base, fmt.Sprintf("live-%d", i), time.Duration(i)*100*time.Millisecond, record.ClassLive, "m1", 20+float64(i), 5, 10))
	}
	bad := rec(base, "shadow-0", 500*time.Millisecond, record.ClassShadow, "m1", 10, 5, 4)
	bad.Error, bad.Status = record.ErrHTTP, 503
	recs = append(recs, bad)
	writeRecords(t, dir, "records-20260501T100000.000Z.jsonl", recs, `{"start": "not json`, `{"class":"live"}`)
	return dir
}

func TestLoadCountsBadLines(t *testing.T) {
	t.Parallel()
	dir := sampleRun(t)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Records) != 31 {
		t.Errorf("read %d records, want 31", len(run.Records))
	}
	if run.Skipped != 2 || len(run.Warnings) != 2 {
		t.Fatalf("skipped %d lines (%q), want the 2 bad ones", run.Skipped, run.Warnings)
	}
	// The warnings say where: file:line.
	if want := "records-20260501T100000.000Z.jsonl:32:"; !strings.Contains(run.Warnings[0], want) {
		t.Errorf("warning %q does not name %s", run.Warnings[0], want)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "no record file") {
		t.Errorf("a folder without record files: %v", err)
	}
	onlyBad := t.TempDir()
	writeRecords(t, onlyBad, "records.jsonl", nil, "garbage")
	if _, err := Load(onlyBad); err == nil || !strings.Contains(err.Error(), "1 lines skipped") {
		t.Errorf("a folder with only bad lines: %v", err)
	}
	if _, err := Load(filepath.Join(empty, "missing")); err == nil {
		t.Error("a missing path loaded")
	}
}

func chart(t *testing.T, rep *Report, id string) Chart {
	t.Helper()
	for _, c := range rep.Charts() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no chart %s", id)
	return Chart{}
}

func series(t *testing.T, c Chart, name string) Series {
	t.Helper()
	for _, s := range c.Series {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("chart %s has no series %q", c.ID, name)
	return Series{}
}

func TestBuildFigures(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	// Ten live requests complete in each of the three seconds (start i*100 ms, ~66 ms long).
	rate := series(t, chart(t, rep, "request_rate"), "live")
	var total float64
	for _, p := range rate.Points {
		total += p.Y
	}
	if total != 30 {
		t.Errorf("live request rate sums to %v over 1 s windows, want 30 requests: %v", total, rate.Points)
	}
	errs := series(t, chart(t, rep, "error_rate"), "shadow")
	if errs.Points[0].Y != 1 {
		t.Errorf("the failed shadow request is not in the first window's errors: %v", errs.Points)
	}
	// TTFT p50 of the first second: the first tokens of requests 0..9 (TTFT 20..29 ms) land
	// in it; the timeline interpolates linearly (p50 24.5, p99 28.91).
	p50 := series(t, chart(t, rep, "ttft_time"), "live p50").Points[0].Y
	p99 := series(t, chart(t, rep, "ttft_time"), "live p99").Points[0].Y
	if math.Abs(p50-24.5) > 1e-3 || math.Abs(p99-28.91) > 1e-3 {
		t.Errorf("first window TTFT p50 %v p99 %v, want 24.5 and 28.91", p50, p99)
	}
	// Failed requests are not latencies: the shadow class has no TTFT CDF.
	cdf := chart(t, rep, "ttft_cdf")
	if len(cdf.Series) != 1 || cdf.Series[0].Name != "live" {
		t.Errorf("TTFT CDF series %v, want live only", cdf.Series)
	}
	last := cdf.Series[0].Points[len(cdf.Series[0].Points)-1]
	if last.X != 49 || last.Y != 1 {
		t.Errorf("CDF ends at %v, want (49, 1)", last)
	}
	// Every successful live request is in the histogram once.
	var n float64
	for _, p := range series(t, chart(t, rep, "ttft_hist"), "live").Points {
		n += p.Y
	}
	if n != 30 {
		t.Errorf("TTFT histogram holds %v requests, want 30", n)
	}
	// The token timeline of the slowest request: its content events, last at its latency.
	tl := chart(t, rep, "token_timelines").Series[0]
	end := tl.Points[len(tl.Points)-1]
	if !strings.HasPrefix(tl.Name, "live-29 ") || end.Y != 10 || math.Abs(end.X-(49+45)) > 1e-9 {
		t.Errorf("slowest timeline %s ends at %v, want live-29 with 10 events at 94 ms", tl.Name, end)
	}
	// The summary comes from telemetry/stats.
	var live *SummaryRow
	for i := range rep.Summary {
		if rep.Summary[i].Key.Class == "live" {
			live = &rep.Summary[i]
		}
	}
	if live == nil || live.Requests != 30 || math.Abs(live.TTFT.P50-34.5) > 0.1 || live.Errors != 0 {
		t.Errorf("live summary row %+v, want 30 requests with TTFT p50 34.5 (HdrHistogram)", live)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	a, err := Load(sampleRun(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(sampleRun(t))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name == b.Name {
		t.Errorf("two runs of the same name keep it: %q", a.Name)
	}
	for _, id := range []string{"ttft_time_a", "ttft_time_b", "token_timelines_a", "token_timelines_b"} {
		chart(t, rep, id)
	}
	// The distributions overlay both runs, in different colors.
	cdf := chart(t, rep, "ttft_cdf")
	if len(cdf.Series) != 2 || cdf.Series[0].Color == cdf.Series[1].Color {
		t.Errorf("compared CDF series %v", cdf.Series)
	}
	if len(rep.Compare) == 0 {
		t.Fatal("no comparison rows")
	}
	for _, c := range rep.Compare {
		if c.Metric == "TTFT p50 (ms)" && c.Ratio() != 1 {
			t.Errorf("identical runs compare at %v", c.Ratio())
		}
	}
	if _, err := Build(); err == nil {
		t.Error("a report of no run built")
	}
}

func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{`<script src=`, `<link rel="stylesheet"`} {
		if strings.Contains(page, bad) {
			t.Errorf("the report holds %q: it must not load anything", bad)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//)|url\(|@import`).FindString(page); m != "" {
		t.Errorf("the report references another resource: %q", m)
	}
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]+)"`).FindStringSubmatch(html.UnescapeString(page))
	if csp == nil || !strings.Contains(csp[1], "script-src 'sha256-") || !strings.Contains(csp[1], "default-src 'none'") {
		t.Errorf("the report's CSP is %q", csp)
	}
	data := regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`).FindStringSubmatch(page)
	if data == nil {
		t.Fatal("no embedded data")
	}
	var doc struct {
		Sections []Section `json:"sections"`
	}
	if err := json.Unmarshal([]byte(data[1]), &doc); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if len(doc.Sections) != 3 || len(doc.Sections[0].Charts) != 6 {
		t.Errorf("embedded sections: %d, first with %d charts", len(doc.Sections), len(doc.Sections[0].Charts))
	}
}

func TestPNG(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	dir := t.TempDir()
	files, err := rep.WritePNGs(dir, 400, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(rep.Charts()) {
		t.Fatalf("%d files for %d charts", len(files), len(rep.Charts()))
	}
	for _, f := range files {
		if err := pngcheck.Check(f, 400, 200); err != nil {
			t.Error(err)
		}
	}
	if _, err := PNG(rep.Charts()[0], 10, 10); err == nil {
		t.Error("a 10×10 chart image was drawn")
	}
}

// TestCompareClasses sets two classes of one recording against each other: live against
// mirror, where the mirror's first tokens came 10 ms later.
func TestCompareClasses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []*record.Record
	for i := range 20 {
		off := time.Duration(i) * 50 * time.Millisecond
		recs = append(recs, rec(base, fmt.Sprintf("l%d", i), off, record.ClassLive, "m1", 20, 5, 10),
			rec(base, fmt.Sprintf("m%d", i), off, record.ClassMirror, "m1", 30, 5, 10))
	}
	writeRecords(t, dir, "records.jsonl", recs)
	load := func(class string) *Run {
		run, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Only(class); err != nil {
			t.Fatal(err)
		}
		return run
	}
	live, mirror := load(record.ClassLive), load(record.ClassMirror)
	if len(live.Records) != 20 || !strings.HasSuffix(live.Name, " · live") {
		t.Fatalf("live run %q with %d records", live.Name, len(live.Records))
	}
	rep, err := Build(live, mirror)
	if err != nil {
		t.Fatal(err)
	}
	var ttft *CompareRow
	for i, c := range rep.Compare {
		if c.Metric == "TTFT p50 (ms)" {
			ttft = &rep.Compare[i]
		}
	}
	if ttft == nil || ttft.Key.Class != "live vs mirror" || math.Abs(ttft.Ratio()-1.5) > 0.01 {
		t.Errorf("TTFT comparison %+v, want live vs mirror at 1.5×", ttft)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Only(record.ClassReplay); err == nil || !strings.Contains(err.Error(), "its classes: live, mirror") {
		t.Errorf("a class the run lacks: %v", err)
	}
}

// TestUsageByTenant: the report sums each tenant's requests, tokens by kind, GPU time and
// cost from the records, failed requests included, and shows them in the HTML.
func TestUsageByTenant(t *testing.T) {
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []*record.Record
	for i := range 6 {
		r := rec(base, fmt.Sprintf("r-%d", i), time.Duration(i)*time.Millisecond, record.ClassLive, "m1", 20, 5, 10)
		r.Tenant = []string{"acme", "globex"}[i%2]
		r.InputTokens, r.CachedTokens, r.CacheWriteTokens, r.ReasoningTokens = 100, 40, 8, 3
		r.GPU = &record.GPUUsage{EnergyJ: 2, GPUSeconds: 0.5}
		r.Cost = &record.Cost{Total: 0.25, Basis: "gpu_hour"}
		recs = append(recs, r)
	}
	recs[5].Error, recs[5].Status = record.ErrHTTP, 500 // globex: one failed request
	rep := reportOf(t, recs)
	got := map[string]UsageRow{}
	for _, u := range rep.Usage {
		got[u.Tenant] = u
	}
	g := got["globex"]
	if len(got) != 2 || g.Requests != 3 || g.Errors != 1 || g.InputTokens != 300 || g.OutputTokens != 30 ||
		g.CachedInputTokens != 120 || g.CacheWriteInputTokens != 24 || g.ReasoningOutputTokens != 9 ||
		math.Abs(g.GPUSeconds-1.5) > 1e-9 || math.Abs(g.EnergyJ-6) > 1e-9 || math.Abs(g.Cost-0.75) > 1e-9 {
		t.Errorf("usage rows %+v", got)
	}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<td>globex</td><td>m1</td><td>live</td><td>3</td><td>1</td><td>300</td>`).Match(b.Bytes()) {
		t.Error("the HTML has no usage row for globex")
	}
	if bytes.Contains(b.Bytes(), []byte("no GPU samples</td>")) {
		t.Error("a row with GPU time reads no GPU samples")
	}
	// Without GPU samples a row's GPU time and cost are unknown, not 0 (issue 34).
	rep.Usage[0].GPUSeconds, rep.Usage[0].EnergyJ, rep.Usage[0].Cost, rep.Usage[0].CostPerMillionTokens = 0, 0, 0, 0
	b.Reset()
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<td>–</td><td>–</td><td class="nogpu">no GPU samples</td><td>–</td>`).Match(b.Bytes()) {
		t.Error("a row without GPU time does not read no GPU samples")
	}
}

// TestLoadSweepFolder: the top folder of a sweep or of repeated runs is refused with what it
// holds and what to give instead (issue 34: report could not read it, and did not say why).
func TestLoadSweepFolder(t *testing.T) {
	dir := t.TempDir()
	for _, run := range []string{"profile_runs/run_0001/concurrency_1", "profile_runs/run_0001/concurrency_4"} {
		if err := os.MkdirAll(filepath.Join(dir, run), 0o700); err != nil {
			t.Fatal(err)
		}
		writeRecords(t, filepath.Join(dir, run), "profile_export.jsonl", nil)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "sweep's or repeated runs' folder (2 runs: profile_runs/run_0001/concurrency_1, profile_runs/run_0001/concurrency_4)") ||
		!strings.Contains(err.Error(), "--compare") {
		t.Errorf("loading a sweep's folder: %v", err)
	}
}
