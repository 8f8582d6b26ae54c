package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/caddyserver/caddy/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	promodel "github.com/prometheus/common/model"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/format/aiperf"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/ui/top"
)

// surfacesCaddyfile is llmtap recording every request in front of the mock, with the admin
// API (summary, /metrics, Connect), and the app's timeline set by the second argument. With
// `timeline off`, llmtap top's windows come from the aggregator's cumulative counts
// (api.StatsTimeline), whose sum over a stream is exact. With the timeline on, windows are
// streamed as they close, and a figure that lands in an earlier window than the one its record
// arrived in (the input tokens in the first token's window, say) reaches a window already
// sent: the stream sends each such window again once it is final (settle after its end), and
// top replaces it, so its sums are exact once every window is final.
const surfacesCaddyfile = `{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	log {
		level ERROR
	}
	llmtap {
		gpu off
		%s
	}
}

http://%s {
	llmtap {
		record %s {
			flush_interval 100ms
		}
	}
	reverse_proxy %s {
		flush_interval -1
	}
}
`

// surfaceRequests is how many requests the bench sends through the proxy.
const surfaceRequests = 72

// TestSurfacesAgree runs `llmtap bench` through Caddy with llmtap (recording) in front of the
// mock, with per-request pace jitter (so latencies spread over several buckets of every
// latency histogram), reasoning tokens (so the definitions of output tokens differ between
// surfaces), HTTP 500s and mid-stream errors, and checks that every surface describes the
// same requests under its documented definition (docs/metrics.md, "Per surface"):
//
//   - counts exactly: requests, errors and tokens in the client's profile_export.jsonl and
//     JSON summary, the proxy's record file, /llmtap/summary, /metrics, the Connect API's
//     Summary, llmtap top's model (the Connect windows it is fed, added up) and llmtap report (over
//     the proxy's records and over the bench's export);
//   - the Prometheus latency histograms bucket by bucket against buckets recomputed from the
//     record file with the same boundaries, each with values in at least three buckets;
//   - p50/p90/p99 of TTFT, ITL and request latency in /llmtap/summary, Connect and the report
//     against a direct computation from the records, within HdrHistogram's precision;
//   - client against proxy only by causality: for the same request id the proxy's TTFT and
//     request latency are at most the client's (the proxy sees the request later and each
//     content event earlier), and the two sides agree on status and tokens.
//
// llmtap top runs on both window sources: the aggregator's statistics (timeline off) and the
// app's timeline (with a short settle, so that its windows turn final within the test).
func TestSurfacesAgree(t *testing.T) {
	t.Run("stats", func(t *testing.T) { testSurfacesAgree(t, "timeline off", api.SourceStats) })
	t.Run("timeline", func(t *testing.T) {
		testSurfacesAgree(t, "timeline {\n\t\t\tsettle 300ms\n\t\t}", llmtap.SourceTimeline)
	})
}

// testSurfacesAgree is TestSurfacesAgree with the app's timeline option timeline, on which
// llmtap top's windows come from source.
func testSurfacesAgree(t *testing.T, timeline, source string) {
	mcfg := mock.DefaultConfig()
	// TTFT 6 ms and ITL 18 ms, each request at its own pace (a lognormal factor with CV 1):
	// TTFTs from about 1 ms to 30 ms, ITLs from 4 to 60 ms, request latencies from 30 ms to
	// half a second.
	mcfg.TTFT, mcfg.ITL, mcfg.RequestJitterCV = 6*time.Millisecond, 18*time.Millisecond, 1
	mcfg.Reasoning = 2
	mcfg.ErrorRate, mcfg.StreamErrorRate = 0.1, 0.08
	mcfg.Seed = 11
	_, mockURL := testkit.StartMock(t, mcfg)

	admin, site := testkit.FreeAddr(t), testkit.FreeAddr(t)
	recDir := filepath.Join(t.TempDir(), "rec")
	cf := fmt.Sprintf(surfacesCaddyfile, admin, timeline, site, recDir, strings.TrimPrefix(mockURL, "http://"))
	testkit.StartCaddyfile(t, "surfaces", cf)
	// The Prometheus collectors live for the process; a model of its own gives this run its own
	// series, and the error counter (labelled by class, not model) is compared by difference.
	mdl := fmt.Sprintf("surfaces-%d", time.Now().UnixNano())
	before := scrapeMetrics(t, admin)

	// llmtap top's model: the timeline windows of its stream, fed to its view, from before the
	// first request.
	ctx := t.Context()
	// The stream's context bounds the wait for top's windows below.
	streamCtx, cancelStream := context.WithTimeout(ctx, 60*time.Second)
	defer cancelStream()
	conn := llmtapv1connect.NewTapServiceClient(&http.Client{}, "http://"+admin)
	view := top.New(top.Options{Base: "http://" + admin, Model: mdl, Keep: 1000})
	st, err := view.Stream(streamCtx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Receive() { // the stream is open: every window from now on is seen
		t.Fatalf("no first timeline window: %v", st.Err())
	}
	view.Add(st.Msg().GetWindow())

	r := runBenchFull(t, "--url", "http://"+site, "--model", mdl, "--concurrency", "8",
		"--request-count", fmt.Sprint(surfaceRequests), "--isl", "40", "--osl", "8",
		"--extra-inputs", "ignore_eos:true", "--random-seed", "3")
	if r.code != 0 {
		t.Fatalf("bench exit %d: %v\n%s\n%s", r.code, r.err, r.out, r.errOut)
	}

	// The client's records.
	client := readLines(t, filepath.Join(r.dir, "profile_export.jsonl"))
	if len(client) != surfaceRequests {
		t.Fatalf("%d lines in profile_export.jsonl, want %d", len(client), surfaceRequests)
	}

	// The proxy counts a request once its handler returned, a moment after the client read the
	// last byte: wait (bounded) until the summary holds every request.
	var sum summaryDocument
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sum = fetchSummary(t, admin)
		if n := sum.total(mdl, "request_count") + sum.total(mdl, "error_request_count"); n == surfaceRequests && sum.InFlight == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/llmtap/summary counts %v requests of %s, want %d", n, mdl, surfaceRequests)
		}
	}
	after := scrapeMetrics(t, admin)
	connSum, err := conn.Summary(ctx, connect.NewRequest(&llmtapv1.SummaryRequest{Window: stats.WindowCumulative}))
	if err != nil {
		t.Fatal(err)
	}
	// top: windows until every request has been attributed to one (bounded by the stream's
	// context: a window closes every second) and, on the timeline, until the newest window
	// then has been sent final: the windows before it that were sent provisional have been sent
	// again final by then (windows turn final in order), and top replaced them.
	var last *llmtapv1.TimelineWindow
	var row *top.Row
	for counted := int64(0); ; {
		if !st.Receive() {
			t.Fatalf("the timeline stream ended before top had every request: %v", st.Err())
		}
		w := st.Msg().GetWindow()
		if w.GetSource() != source {
			t.Fatalf("top's windows come from %q, want %q", w.GetSource(), source)
		}
		if view.Add(w) {
			last = w
		}
		row = view.Row(top.Key{Model: mdl, Class: record.ClassLive})
		if row == nil || row.Total.Requests < surfaceRequests {
			continue
		}
		if counted == 0 {
			counted = view.Newest()
		}
		if source == api.SourceStats || (w.GetFinal() && w.GetSeq() >= counted) {
			break
		}
	}
	topTotals := row.Total
	if source != api.SourceStats && row.Provisional() > 0 {
		t.Errorf("top still holds %d provisional windows after the newest turned final", row.Provisional())
	}

	// The proxy's records, from its file (Caddy stops first: that flushes the recorder).
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	recs := recordFile(t, recDir)
	if len(recs) != surfaceRequests {
		t.Fatalf("%d records in the record file, want %d", len(recs), surfaceRequests)
	}
	byID := map[string]*record.Record{}
	exp := expectFrom(recs, mdl)
	// The bench's AIPerf-named files count the same requests by AIPerf's rules
	// (docs/metrics.md, "Which requests count"): a stream with content before its error event
	// is valid there.
	aiperfRecs := make([]*record.Record, len(recs))
	for i, rec := range recs {
		aiperfRecs[i] = aiperf.Counted(rec)
	}
	aexp := expectFrom(aiperfRecs, mdl)
	for _, rec := range recs {
		byID[rec.RequestID] = rec
	}
	if exp.ok == 0 || exp.errs["http_status"] == 0 || exp.errs["stream_error"] == 0 || exp.reasoning == 0 {
		t.Fatalf("the run lacks a kind of request the test compares: %d ok, errors %v, %d reasoning tokens", exp.ok, exp.errs, exp.reasoning)
	}
	t.Logf("%d requests: %d ok, errors %v; %d input, %d output tokens (%d reasoning)", surfaceRequests, exp.ok, exp.errs, exp.isl, exp.osl, exp.reasoning)

	// Client against proxy, request by request: same status and tokens; times by causality.
	var clientOK, clientErrs, clientISL, clientOSL, clientOut int64
	for _, l := range client {
		id, _ := l["request_id"].(string)
		rec := byID[id]
		if rec == nil {
			t.Errorf("the client's request %q has no proxy record", id)
			continue
		}
		if md := l["metadata"].(map[string]any); md["x_request_id"] != id {
			t.Errorf("%s: metadata.x_request_id %v", id, md["x_request_id"])
		}
		_, failed := l["metrics"].(map[string]any)["error_request_count"]
		if failed != !aiperf.Counted(rec).OK() || int(l["status"].(float64)) != rec.Status {
			t.Errorf("%s: the client saw status %v error %v, the proxy %d %q", id, l["status"], l["error"], rec.Status, rec.Error)
			continue
		}
		if failed {
			clientErrs++
			continue
		}
		clientOK++
		in, out := int64(l["input_tokens"].(float64)), int64(l["output_tokens"].(float64))
		if in != rec.InputTokens || out != rec.OutputTokens || int64(l["reasoning_tokens"].(float64)) != rec.ReasoningTokens {
			t.Errorf("%s: client %d in / %d out / %v reasoning tokens, proxy %d / %d / %d", id, in, out, l["reasoning_tokens"], rec.InputTokens, rec.OutputTokens, rec.ReasoningTokens)
		}
		// AIPerf's tags in the client's export: output_token_count without the reasoning,
		// output_sequence_length with it.
		m := l["metrics"].(map[string]any)
		if v := exportValue(m, stats.TagOutputTokenCount); v != float64(stats.OutputTokenCount(rec)) {
			t.Errorf("%s: output_token_count %v, want %d (the proxy's %d − %d reasoning)", id, v, stats.OutputTokenCount(rec), rec.OutputTokens, rec.ReasoningTokens)
		}
		if v := exportValue(m, stats.TagOutputSeqLength); v != float64(rec.OutputTokens) {
			t.Errorf("%s: output_sequence_length %v, want the proxy's %d", id, v, rec.OutputTokens)
		}
		clientISL += in
		clientOSL += out
		clientOut += stats.OutputTokenCount(rec)
		for _, q := range []struct {
			name          string
			proxy, client *float64
		}{{"ttft", rec.TTFTMs, floatField(l, "ttft_ms")}, {"request latency", rec.RequestLatencyMs, floatField(l, "request_latency_ms")}} {
			if q.proxy == nil || q.client == nil {
				t.Errorf("%s: %s missing: proxy %v, client %v", id, q.name, q.proxy, q.client)
			} else if *q.proxy > *q.client+causalSlackMs {
				t.Errorf("%s: the proxy's %s %.3f ms is above the client's %.3f ms: the proxy cannot see an event before the client sent the request or after the client read it", id, q.name, *q.proxy, *q.client)
			}
		}
	}
	checkCounts(t, "client profile_export.jsonl", aexp, clientOK, clientErrs, clientISL, clientOSL)
	if clientOut != aexp.out {
		t.Errorf("client: Σ output_token_count %d, want %d", clientOut, aexp.out)
	}
	// The client's JSON summary: AIPerf's tags over every status class together.
	for tag, want := range map[string]float64{
		stats.TagRequestCount: float64(aexp.ok), stats.TagErrorRequestCount: float64(aexp.failed()),
		stats.TagTotalISL: float64(aexp.isl), stats.TagTotalOSL: float64(aexp.osl),
		stats.TagTotalOutputTokens: float64(aexp.out), stats.TagTotalReasoning: float64(aexp.reasoning),
	} {
		if got := r.avg(tag); got != want {
			t.Errorf("profile_export_aiperf.json: %s %v, want %v", tag, got, want)
		}
	}

	// /llmtap/summary and the Connect API: AIPerf's tags, one group per status class.
	connGroups := map[string]*llmtapv1.Group{}
	for _, g := range connSum.Msg.GetGroups() {
		if g.GetModel() == mdl && g.GetWindow() == stats.WindowCumulative {
			connGroups[g.GetClass()+"/"+g.GetStatusClass()] = g
		}
	}
	summaryGroups := map[string]map[string]json.RawMessage{}
	for _, g := range sum.Summary.Groups {
		var key struct{ Model, Class, StatusClass, Window string }
		key.Model, key.Class, key.StatusClass, key.Window = str(g["model"]), str(g["class"]), str(g["status_class"]), str(g["window"])
		if key.Model == mdl && key.Window == stats.WindowCumulative {
			summaryGroups[key.Class+"/"+key.StatusClass] = g
		}
	}
	if len(summaryGroups) != len(exp.byStatus) || len(connGroups) != len(exp.byStatus) {
		t.Errorf("groups of %s: summary %v, Connect %v, records %v", mdl, keys(summaryGroups), keys(connGroups), exp.byStatus)
	}
	for sc, e := range exp.byStatus {
		key := record.ClassLive + "/" + sc
		sg, cg := summaryGroups[key], connGroups[key]
		if sg == nil || cg == nil {
			t.Errorf("status class %s: summary group %v, Connect group %v", sc, sg != nil, cg != nil)
			continue
		}
		for tag, want := range map[string]float64{
			stats.TagRequestCount: float64(e.ok), stats.TagErrorRequestCount: float64(e.failed),
			stats.TagTotalISL: float64(e.isl), stats.TagTotalOSL: float64(e.osl),
			stats.TagTotalOutputTokens: float64(e.out),
		} {
			if tag != stats.TagRequestCount && tag != stats.TagErrorRequestCount && e.ok == 0 {
				continue // a group without a valid request has no token totals
			}
			if got := scalarOf(t, sg[tag]); got != want {
				t.Errorf("/llmtap/summary %s: %s %v, want %v", key, tag, got, want)
			}
			if got := cg.GetScalars()[tag].GetValue(); got != want {
				t.Errorf("Connect Summary %s: %s %v, want %v", key, tag, got, want)
			}
		}
	}
	ok2xx := record.ClassLive + "/2xx"
	for _, tag := range []string{stats.TagTTFT, stats.TagITL, stats.TagRequestLatency} {
		vals := exp.values[tag]
		var ss stats.Stat
		if err := json.Unmarshal(summaryGroups[ok2xx][tag], &ss); err != nil {
			t.Errorf("/llmtap/summary %s %s: %v", ok2xx, tag, err)
			continue
		}
		cs := connGroups[ok2xx].GetMetrics()[tag]
		for _, p := range []float64{50, 90, 99} {
			want := exactPercentile(vals, p)
			for _, got := range []struct {
				surface string
				v       float64
			}{
				{"/llmtap/summary", statField(ss, p)},
				{"Connect Summary", map[float64]float64{50: cs.GetP50(), 90: cs.GetP90(), 99: cs.GetP99()}[p]},
			} {
				if !withinHdr(got.v, want) {
					t.Errorf("%s %s p%v = %.4f ms, the records give %.4f ms", got.surface, tag, p, got.v, want)
				}
			}
		}
		if ss.Count != int64(len(vals)) || cs.GetCount() != int64(len(vals)) {
			t.Errorf("%s count: summary %d, Connect %d, records %d", tag, ss.Count, cs.GetCount(), len(vals))
		}
	}

	// /metrics: the GenAI conventions' definitions (output tokens include reasoning), one
	// series per status class; histograms only over successful requests.
	labels := map[string]string{"model": mdl, "class": record.ClassLive}
	for sc, e := range exp.byStatus {
		labels["status_class"] = sc
		if got := counterValue(after, "llmtap_requests_total", labels); got != float64(e.ok+e.failed) {
			t.Errorf("/metrics llmtap_requests_total{%s} %v, want %d", sc, got, e.ok+e.failed)
		}
		if got := histogramOf(after, "gen_ai_client_operation_duration_seconds", labels).GetSampleCount(); got != uint64(e.ok+e.failed) {
			t.Errorf("/metrics gen_ai_client_operation_duration_seconds{%s} count %d, want %d", sc, got, e.ok+e.failed)
		}
	}
	for class, n := range exp.errs {
		l := map[string]string{"class": record.ClassLive, "error": class}
		if got := counterValue(after, "llmtap_request_errors_total", l) - counterValue(before, "llmtap_request_errors_total", l); got != float64(n) {
			t.Errorf("/metrics llmtap_request_errors_total{error=%q} rose by %v, want %d", class, got, n)
		}
	}
	labels["status_class"] = "2xx"
	for _, h := range []struct {
		name, tag string
		bounds    []float64
	}{
		{"gen_ai_server_time_to_first_token_seconds", stats.TagTTFT, otel.TTFTBuckets},
		{"gen_ai_server_time_per_output_token_seconds", stats.TagITL, otel.TPOTBuckets},
		{"gen_ai_server_request_duration_seconds", stats.TagRequestLatency, otel.DurationBuckets},
	} {
		hist := histogramOf(after, h.name, labels)
		vals := exp.values[h.tag]
		if hist.GetSampleCount() != uint64(len(vals)) {
			t.Errorf("/metrics %s count %d, the records have %d values", h.name, hist.GetSampleCount(), len(vals))
		}
		var got []uint64
		for _, b := range hist.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the text format's +Inf bucket is the count
				got = append(got, b.GetCumulativeCount())
			}
		}
		want, filled := bucketsOf(vals, h.bounds)
		if !slices.Equal(got, want) {
			t.Errorf("/metrics %s buckets %v, the records give %v (boundaries %v)", h.name, got, want, h.bounds)
		}
		if filled < 3 {
			t.Errorf("%s: values in %d buckets (%v); the test needs at least 3 to prove the buckets agree", h.name, filled, want)
		}
		if s := secondsSum(vals); math.Abs(hist.GetSampleSum()-s) > 1e-9*max(1, s) {
			t.Errorf("/metrics %s sum %v, the records give %v", h.name, hist.GetSampleSum(), s)
		}
	}
	for typ, want := range map[string]int64{"input": exp.isl, "output": exp.osl} {
		l := map[string]string{"gen_ai_token_type": typ, "model": mdl, "class": record.ClassLive, "status_class": "2xx"}
		if h := histogramOf(after, "gen_ai_client_token_usage", l); h.GetSampleSum() != float64(want) || h.GetSampleCount() != uint64(exp.ok) {
			t.Errorf("/metrics gen_ai_client_token_usage{%s} sum %v count %d, want %d tokens over %d requests", typ, h.GetSampleSum(), h.GetSampleCount(), want, exp.ok)
		}
	}

	// llmtap top's model: requests and errors of every status class; tokens as the Connect
	// Timeline defines them (total_isl, and total_osl: all generated tokens, reasoning
	// included, of the successful requests).
	if topTotals.Requests != surfaceRequests || topTotals.Errors != int64(exp.failed()) {
		t.Errorf("top: %d requests, %d errors over its windows; want %d and %d", topTotals.Requests, topTotals.Errors, surfaceRequests, exp.failed())
	}
	if math.Abs(topTotals.Output-float64(exp.osl)) > 1e-6 || math.Abs(topTotals.Input-float64(exp.isl)) > 1e-6 {
		t.Errorf("top: %v output and %v input tokens over its windows; want %d and %d", topTotals.Output, topTotals.Input, exp.osl, exp.isl)
	}
	if row := topFields(view.Frame(last, 0), mdl, record.ClassLive); row == nil {
		t.Errorf("top's frame has no row for %s:\n%s", mdl, view.Frame(last, 0))
	}

	// llmtap report, over the proxy's records and over the bench's export.
	for _, rc := range []struct {
		name, dir, class string
	}{{"proxy records", recDir, record.ClassLive}, {"bench export", r.dir, record.ClassBench}} {
		run, err := report.Load(rc.dir)
		if err != nil {
			t.Fatalf("report %s: %v", rc.name, err)
		}
		rep, err := report.Build(run)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]report.SummaryRow{}
		for _, row := range rep.Summary {
			if row.Key.Model != mdl || row.Key.Class != rc.class {
				t.Errorf("report %s: a row of %+v", rc.name, row.Key)
			}
			rows[row.Key.StatusClass] = row
		}
		want := exp // the proxy's records: llmtap's verdict
		if rc.class == record.ClassBench {
			want = aexp // the bench's export: the run's own summary, AIPerf's verdict
		}
		for sc, e := range want.byStatus {
			row, ok := rows[sc]
			if !ok || row.Requests != e.ok || row.Errors != e.failed {
				t.Errorf("report %s %s: %+v; want %d requests, %d errors", rc.name, sc, row, e.ok, e.failed)
			}
		}
		if rc.class != record.ClassLive {
			continue // the client's times are its own (network included): compared above by causality
		}
		row := rows["2xx"]
		for _, q := range []struct {
			tag string
			s   stats.Stat
		}{{stats.TagTTFT, row.TTFT}, {stats.TagITL, row.ITL}, {stats.TagRequestLatency, row.Latency}} {
			for _, p := range []float64{50, 90, 99} {
				if got, want := statField(q.s, p), exactPercentile(exp.values[q.tag], p); !withinHdr(got, want) {
					t.Errorf("report %s p%v = %.4f ms, the records give %.4f ms", q.tag, p, got, want)
				}
			}
		}
	}
}

// causalSlackMs absorbs float rounding in the causal comparisons of times.
const causalSlackMs = 0.001

// expected is what the proxy's records say, per definition.
type expected struct {
	ok                       int64
	errs                     map[string]int64 // failed requests by error class
	isl, osl, out, reasoning int64            // over successful requests
	byStatus                 map[string]*statusCounts
	values                   map[string][]float64 // tag → values of successful requests (ms)
}

type statusCounts struct{ ok, failed, isl, osl, out int64 }

func (e *expected) failed() int64 {
	var n int64
	for _, v := range e.errs {
		n += v
	}
	return n
}

// expectFrom computes every figure the surfaces show from the records, directly.
func expectFrom(recs []*record.Record, mdl string) *expected {
	e := &expected{errs: map[string]int64{}, byStatus: map[string]*statusCounts{}, values: map[string][]float64{}}
	for _, r := range recs {
		sc := e.byStatus[r.StatusClass()]
		if sc == nil {
			sc = &statusCounts{}
			e.byStatus[r.StatusClass()] = sc
		}
		if r.Model != mdl {
			continue
		}
		if !r.OK() {
			e.errs[r.Error]++
			sc.failed++
			continue
		}
		e.ok++
		sc.ok++
		e.isl += r.InputTokens
		e.osl += r.OutputTokens
		e.out += stats.OutputTokenCount(r)
		e.reasoning += r.ReasoningTokens
		sc.isl += r.InputTokens
		sc.osl += r.OutputTokens
		sc.out += stats.OutputTokenCount(r)
		for tag, v := range map[string]*float64{stats.TagTTFT: r.TTFTMs, stats.TagITL: r.ITLMs, stats.TagRequestLatency: r.RequestLatencyMs} {
			if v != nil {
				e.values[tag] = append(e.values[tag], *v)
			}
		}
	}
	for _, vs := range e.values {
		slices.Sort(vs)
	}
	return e
}

func checkCounts(t *testing.T, surface string, e *expected, ok, errs, isl, osl int64) {
	t.Helper()
	if ok != e.ok || errs != e.failed() || isl != e.isl || osl != e.osl {
		t.Errorf("%s: %d ok, %d failed, %d input and %d output tokens; the proxy's records: %d, %d, %d, %d", surface, ok, errs, isl, osl, e.ok, e.failed(), e.isl, e.osl)
	}
}

// exactPercentile is numpy's linear percentile of sorted values.
func exactPercentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// withinHdr reports whether a percentile from an HdrHistogram of 3 significant digits is the
// exact one: within 0.05 % plus half a recorded unit (1 µs, 0.0005 ms) — stats.Stat's bound.
func withinHdr(got, want float64) bool {
	return math.Abs(got-want) <= 0.0005*math.Abs(want)+0.0005
}

func statField(s stats.Stat, p float64) float64 {
	return map[float64]float64{50: s.P50, 90: s.P90, 99: s.P99}[p]
}

// bucketsOf returns the cumulative bucket counts of ms values (observed in seconds, as the
// metrics sink does) for Prometheus boundaries, and how many buckets (+Inf included) hold a
// value.
func bucketsOf(ms []float64, bounds []float64) ([]uint64, int) {
	cum := make([]uint64, len(bounds))
	var inf uint64
	for _, v := range ms {
		s := v / 1000
		for i, b := range bounds {
			if s <= b {
				cum[i]++
			}
		}
		inf++
	}
	filled := 0
	prev := uint64(0)
	for _, c := range append(slices.Clone(cum), inf) {
		if c > prev {
			filled++
		}
		prev = c
	}
	return cum, filled
}

func secondsSum(ms []float64) float64 {
	s := 0.0
	for _, v := range ms {
		s += v / 1000
	}
	return s
}

// summaryDocument is GET /llmtap/summary, its groups kept as AIPerf-layout members.
type summaryDocument struct {
	InFlight int64 `json:"in_flight"`
	Summary  struct {
		Groups []map[string]json.RawMessage `json:"groups"`
	} `json:"summary"`
}

// total adds a scalar tag over the cumulative groups of model.
func (d summaryDocument) total(mdl, tag string) float64 {
	v := 0.0
	for _, g := range d.Summary.Groups {
		if str(g["model"]) == mdl && str(g["window"]) == stats.WindowCumulative {
			var s stats.Scalar
			if json.Unmarshal(g[tag], &s) == nil {
				v += s.Value
			}
		}
	}
	return v
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func scalarOf(t *testing.T, raw json.RawMessage) float64 {
	t.Helper()
	var s stats.Scalar
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Errorf("scalar %s: %v", raw, err)
	}
	return s.Value
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func fetchSummary(t *testing.T, admin string) summaryDocument {
	t.Helper()
	var d summaryDocument
	if err := json.Unmarshal(testkit.Get(t, "http://"+admin+"/llmtap/summary"), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func scrapeMetrics(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(promodel.UTF8Validation)
	mf, err := p.TextToMetricFamilies(bytes.NewReader(testkit.Get(t, "http://"+admin+"/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// metricOf returns the series of family name whose labels include want, nil when none.
func metricOf(mf map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := mf[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match == len(want) {
			return m
		}
	}
	return nil
}

func counterValue(mf map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	return metricOf(mf, name, labels).GetCounter().GetValue()
}

func histogramOf(mf map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	return metricOf(mf, name, labels).GetHistogram()
}

// recordFile reads the proxy's records-*.jsonl files.
func recordFile(t *testing.T, dir string) []*record.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "records-*.jsonl"))
	var out []*record.Record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(b) {
			r := new(record.Record)
			if err := json.Unmarshal(line, r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, r)
		}
	}
	return out
}

func exportValue(m map[string]any, tag string) float64 {
	v, ok := m[tag].(map[string]any)
	if !ok {
		return -1
	}
	f, _ := v["value"].(float64)
	return f
}

func floatField(l map[string]any, name string) *float64 {
	f, ok := l[name].(float64)
	if !ok {
		return nil
	}
	return &f
}
