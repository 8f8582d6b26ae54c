package llmtap_test

// In-process end-to-end tests: real Caddy (loaded from a Caddyfile, as users run it) with the
// llmtap handler and reverse_proxy in front of the mock inference server, whose ground truth
// (the time of every write) the measurements are compared with. The tests run one after
// another: Caddy's config is process-wide.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

const (
	streamTokens = 64
	streamTTFT   = 30 * time.Millisecond
	streamITL    = 5 * time.Millisecond
)

// streamingMock is the upstream of the streaming tests: vLLM-like streams with a role chunk
// first, a ground-truth trace per request, prompts counted for free.
func streamingMock() mock.Config {
	return mock.Config{
		Model:         "e2e-model",
		TTFT:          streamTTFT,
		ITL:           streamITL,
		OutputTokens:  streamTokens,
		RoleChunk:     true,
		LogEvents:     true,
		PromptCounter: mock.PromptApprox,
		Seed:          7,
		// Irregular gaps make every gap distinguishable from its neighbours, so an event timed
		// by a neighbour's write falls outside checkTiming's bounds; the seed keeps them the
		// same on every run.
		JitterCV: 1,
	}
}

// proxySite is a server block with llmtap in front of addr, plus extra directives.
func proxySite(addr, extra string) site {
	return site{body: extra + "\tllmtap\n\treverse_proxy " + addr}
}

func TestStreamingConcurrentHTTP1(t *testing.T) {
	up := startUpstream(t, streamingMock())
	p, _ := loadProxy(t, "", proxySite(up.addr, ""))
	runStreams(t, p, up, newClient(t), 32, "h1", 1)
}

// TestStreamingConcurrentH2C is the same over HTTP/2 without TLS (prior knowledge) between
// the client and Caddy: HTTP/2 frames the body differently, and the handler must see the same
// events at the same times.
func TestStreamingConcurrentH2C(t *testing.T) {
	up := startUpstream(t, streamingMock())
	p, _ := loadProxy(t, "\tservers {\n\t\tprotocols h1 h2c\n\t}", proxySite(up.addr, ""))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	runStreams(t, p, up, &http.Client{Transport: tr, Timeout: 20 * time.Second}, 32, "h2c", 2)
}

// runStreams sends n concurrent streaming chat requests through p, half of them asking for a
// usage chunk, and checks every byte and every measurement against the mock's ground truth and
// the client's own times.
func runStreams(t *testing.T, p *proxy, up *upstream, c *http.Client, n int, tag string, protoMajor int) {
	t.Helper()
	url := p.sites[0] + "/v1/chat/completions"
	type result struct {
		timed
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := testkit.NewPost(t.Context(), url, fmt.Sprintf("%s-stream-%d", tag, i), chatBody("e2e-model", streamTokens, true, i%2 == 0))
			if err == nil {
				results[i].timed, err = postTimed(c, req, nil)
			}
			results[i].err = err
		})
	}
	wg.Wait()

	recs := p.records(t)
	recorded := time.Now() // every request's measurement ended before this
	acc := &accuracy{}
	for i, res := range results {
		id := fmt.Sprintf("%s-stream-%d", tag, i)
		if res.err != nil || res.resp.StatusCode != http.StatusOK {
			t.Errorf("%s: response %v, error %v", id, res.resp, res.err)
			continue
		}
		if res.resp.ProtoMajor != protoMajor {
			t.Errorf("%s: response over HTTP/%d, want HTTP/%d", id, res.resp.ProtoMajor, protoMajor)
		}
		sent, ok := up.sentBody(id)
		if !ok {
			t.Errorf("%s: the mock never saw the request (X-Request-Id not forwarded?)", id)
			continue
		}
		if !bytes.Equal(res.body, sent) {
			t.Errorf("%s: the client got %d bytes that differ from the %d the mock sent", id, len(res.body), len(sent))
		}
		tr, ok := up.mock.TraceByID(id)
		if !ok {
			t.Errorf("%s: no ground-truth trace", id)
			continue
		}
		rec, ok := recs[id]
		if !ok {
			t.Errorf("%s: no record in /llmtap/requests", id)
			continue
		}
		checkStreamRecord(t, id, rec, tr, res.timed, recorded, i%2 == 0, acc)
	}
	acc.log(t)
}

// accuracy pools, over the streams of a test, how far behind the mock's writes llmtap and the
// client saw each content event, and how far their inter-chunk gaps were from the mock's. The
// figures are logged, not asserted: on a busy machine (CI runs packages in parallel under the
// race detector) delivery takes milliseconds, and that is the machine, not llmtap. What is
// asserted is exact (see checkTiming).
type accuracy struct {
	delays, gapErrs             []float64 // llmtap's
	clientDelays, clientGapErrs []float64 // the client's
	streams                     int
}

func (a *accuracy) log(t *testing.T) {
	t.Helper()
	if a.streams == 0 {
		return
	}
	t.Logf("over %d streams, behind the mock's writes: llmtap median %.3f ms (p99 %.3f), the client %.3f ms (p99 %.3f); "+
		"median |inter-chunk gap error|: llmtap %.3f ms, the client %.3f ms",
		a.streams, median(a.delays), quantile(a.delays, 0.99), median(a.clientDelays), quantile(a.clientDelays, 0.99),
		median(a.gapErrs), median(a.clientGapErrs))
}

// checkStreamRecord checks one streamed record against the mock's trace of the same request and
// the client's times.
func checkStreamRecord(t *testing.T, id string, rec record.Record, tr mock.Trace, cl timed, recorded time.Time, usage bool, acc *accuracy) {
	t.Helper()
	if rec.Status != 200 || !rec.Stream || rec.Error != "" || rec.Class != record.ClassLive {
		t.Errorf("%s: status %d stream %v error %q (%s) class %q; want 200, true, none, live",
			id, rec.Status, rec.Stream, rec.Error, rec.ErrorMsg, rec.Class)
	}
	if rec.Model != "e2e-model" || rec.API != "openai.chat" || rec.Finish != "length" {
		t.Errorf("%s: model %q api %q finish %q; want e2e-model, openai.chat, length", id, rec.Model, rec.API, rec.Finish)
	}
	if rec.Bytes != int64(len(cl.body)) {
		t.Errorf("%s: record counts %d bytes, the mock sent %d", id, rec.Bytes, len(cl.body))
	}
	wantSource, wantUsage := record.SourceTokenizer, int64(-1)
	if usage {
		wantSource, wantUsage = record.SourceUsage, streamTokens
	}
	if rec.OutputTokens != streamTokens || rec.OutputTokensSource != wantSource || rec.UsageOutputTokens != wantUsage {
		t.Errorf("%s: output tokens %d from %q (usage %d); want %d from %q (usage %d)",
			id, rec.OutputTokens, rec.OutputTokensSource, rec.UsageOutputTokens, streamTokens, wantSource, wantUsage)
	}
	if rec.InputTokens <= 0 || rec.InputTokensSource == record.SourceNone {
		t.Errorf("%s: input tokens %d from %q; want a count", id, rec.InputTokens, rec.InputTokensSource)
	}
	checkTiming(t, id, rec, tr, cl, recorded, acc)
}

// checkTiming compares the record's times with the mock's writes and the client's times: its
// content events through checkEventTimes, whose bounds are exact whatever the load and asserted
// event by event (an event stamped with an earlier write or a later one — the mock's gaps are
// jittered, so a neighbour's time falls outside whenever delivery is quicker than the gap —
// gaps that do not add up, a TTFT or latency field that is not the first or last event's time
// all fall outside), then the headers, duration and ITL fields. How wide the windows are (the
// delivery delay) is the machine's; it is logged (see accuracy). TestStreamingLockStep closes
// the windows: its upstream writes the next event only after the client read the last.
func checkTiming(t *testing.T, id string, rec record.Record, tr mock.Trace, cl timed, recorded time.Time, acc *accuracy) {
	t.Helper()
	var writes, reads []time.Time // per content event: the mock's write, the client's read
	var headersAt float64         // the mock's headers write from its arrival
	body := 0                     // events written in the body
	for _, e := range tr.Events {
		if e.Kind == mock.KindHeaders {
			headersAt = msSince(tr.Arrived, e.At)
			continue
		}
		if e.Kind == mock.KindContent && body < len(cl.reads) {
			writes = append(writes, e.At)
			reads = append(reads, cl.reads[body])
		}
		body++
	}
	if len(cl.reads) != body {
		t.Errorf("%s: the client read %d events, the mock wrote %d", id, len(cl.reads), body)
		return
	}
	if len(writes) != streamTokens {
		t.Fatalf("%s: the mock wrote %d content events, want %d", id, len(writes), streamTokens)
	}
	if rec.HeadersMs == nil {
		t.Errorf("%s: no headers_ms", id)
		return
	}
	at := checkEventTimes(t, id, rec, cl.sent, tr.Arrived, writes, reads)
	if at == nil {
		return
	}
	// What the window held, logged: llmtap's and the client's delay behind the mock, and their
	// gap errors. llmtap's delay takes the hop from t0 to the mock's arrival from the record's
	// start, a wall-clock time: a wall and a monotonic reading are two clock reads, which a busy
	// machine can pull milliseconds apart, so these figures are not asserted.
	hop := msSince(rec.Start, tr.Arrived)
	var delays, clientDelays, gapErrs, clientGapErrs []float64
	for i := range at {
		truth, client := msSince(tr.Arrived, writes[i]), msSince(tr.Arrived, reads[i])
		delays = append(delays, at[i]-hop-truth)
		clientDelays = append(clientDelays, client-truth)
		if i > 0 {
			gap := msSince(writes[i-1], writes[i])
			gapErrs = append(gapErrs, abs(at[i]-at[i-1]-gap))
			clientGapErrs = append(clientGapErrs, abs(msSince(reads[i-1], reads[i])-gap))
		}
	}
	acc.delays = append(acc.delays, delays...)
	acc.clientDelays = append(acc.clientDelays, clientDelays...)
	acc.gapErrs = append(acc.gapErrs, gapErrs...)
	acc.clientGapErrs = append(acc.clientGapErrs, clientGapErrs...)
	acc.streams++
	if h := *rec.HeadersMs; h < headersAt-causalSlackMs || h > msSince(cl.sent, cl.headers)+causalSlackMs || h > *rec.TTFTMs {
		t.Errorf("%s: headers at %.3f ms, want %.3f to %.3f ms (the mock's write from its arrival to the client's from its send) and before the first token at %.3f ms",
			id, h, headersAt, msSince(cl.sent, cl.headers), *rec.TTFTMs)
	}
	// The duration ends when the exchange did (the handler returned), after the last byte.
	if d := rec.DurationMs; d < *rec.RequestLatencyMs || d > msSince(cl.sent, recorded) {
		t.Errorf("%s: duration %.3f ms, want from the request latency %.3f ms to when the record was read (%.3f ms after the send)",
			id, d, *rec.RequestLatencyMs, msSince(cl.sent, recorded))
	}
	if rec.ITLMs == nil {
		t.Errorf("%s: no itl_ms", id)
		return
	}
	if itl := (*rec.RequestLatencyMs - *rec.TTFTMs) / float64(streamTokens-1); abs(*rec.ITLMs-itl) > 1e-6 {
		t.Errorf("%s: itl %.6f ms, want (latency - ttft)/(tokens - 1) = %.6f", id, *rec.ITLMs, itl)
	}
	if testing.Verbose() {
		t.Logf("%s: hop %.3f ms, median delay %.3f ms (client %.3f), max %.3f ms (client %.3f), median |gap error| %.3f ms (client %.3f)",
			id, hop, median(delays), median(clientDelays), slices.Max(delays), slices.Max(clientDelays), median(gapErrs), median(clientGapErrs))
	}
}

// checkEventTimes checks a record's content event times against what causality allows, all on
// this process's monotonic clock: the client sent the request (sent) before llmtap saw it (t0),
// which was before the upstream began to answer (arrived); the upstream began to write event k
// (w_k) before llmtap's writer got it (r_k), before the client had read it (c_k). So
//
//	w_k - arrived  <=  r_k - t0  <=  c_k - sent       (its time from t0; for k = 0 the TTFT)
//	w_k - c_0      <=  r_k - r_0  <=  c_k - w_0       (its position after the first, from the gaps)
//
// and the request latency is the last event's time. It returns the events' times from t0, as
// the record's TTFT and gaps put them, or nil when the record lacks them.
func checkEventTimes(t *testing.T, id string, rec record.Record, sent, arrived time.Time, w, c []time.Time) []float64 {
	t.Helper()
	if rec.ContentEvents != len(w) || len(rec.InterChunkMs) != len(w)-1 || rec.TTFTMs == nil || rec.RequestLatencyMs == nil {
		t.Errorf("%s: %d content events, %d gaps, ttft %v, latency %v; want %d events and %d gaps",
			id, rec.ContentEvents, len(rec.InterChunkMs), rec.TTFTMs, rec.RequestLatencyMs, len(w), len(w)-1)
		return nil
	}
	at := make([]float64, len(w))
	outside := 0
	for k := range w {
		at[k] = *rec.TTFTMs
		if k > 0 {
			at[k] = at[k-1] + rec.InterChunkMs[k-1]
		}
		lo, hi := msSince(arrived, w[k]), msSince(sent, c[k])
		pos, posLo, posHi := at[k]-at[0], msSince(c[0], w[k]), msSince(w[0], c[k])
		if at[k] < lo-causalSlackMs || at[k] > hi+causalSlackMs || pos < posLo-causalSlackMs || pos > posHi+causalSlackMs {
			if outside == 0 {
				t.Errorf("%s: content event %d at %.3f ms from t0, want %.3f to %.3f ms; %.3f ms after the first, want %.3f to %.3f ms "+
					"(from the upstream's write to the client's read): events misattributed", id, k, at[k], lo, hi, pos, posLo, posHi)
			}
			outside++
		}
	}
	if outside > 1 {
		t.Errorf("%s: %d of %d content events outside their bounds", id, outside, len(w))
	}
	if last := at[len(at)-1]; abs(*rec.RequestLatencyMs-last) > causalSlackMs {
		t.Errorf("%s: request latency %.3f ms, the gaps put the last content event at %.3f ms", id, *rec.RequestLatencyMs, last)
	}
	return at
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestNonStreaming checks a JSON (non-SSE) response: passed unchanged, measured as one body.
func TestNonStreaming(t *testing.T) {
	cfg := streamingMock()
	up := startUpstream(t, cfg)
	p, _ := loadProxy(t, "", proxySite(up.addr, ""))
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	const n = 3
	elapsed := make([]float64, n)
	for i := range n {
		id := fmt.Sprintf("unary-%d", i)
		start := time.Now()
		resp, body, err := testkit.PostJSON(t.Context(), c, url, id, chatBody("e2e-model", 16, false, false))
		elapsed[i] = msSince(start, time.Now())
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", id, resp, err)
		}
		if sent, _ := up.sentBody(id); !bytes.Equal(body, sent) {
			t.Errorf("%s: the client got %q, the mock sent %q", id, body, sent)
		}
	}
	recs := p.records(t)
	for i := range n {
		id := fmt.Sprintf("unary-%d", i)
		rec, ok := recs[id]
		tr, tok := up.mock.TraceByID(id)
		if !ok || !tok || len(tr.Events) == 0 {
			t.Fatalf("%s: record %v, trace %v", id, ok, tok)
		}
		if rec.Status != 200 || rec.Stream || rec.Error != "" || rec.TTFTMs != nil || rec.InterChunkMs != nil || rec.ITLMs != nil {
			t.Errorf("%s: status %d stream %v error %q ttft %v gaps %v itl %v; want 200, false, none, null, null, null",
				id, rec.Status, rec.Stream, rec.Error, rec.TTFTMs, rec.InterChunkMs, rec.ITLMs)
		}
		if rec.OutputTokens != 16 || rec.OutputTokensSource != record.SourceUsage || rec.InputTokensSource != record.SourceUsage {
			t.Errorf("%s: output tokens %d from %q, input from %q; want 16 from usage, input from usage",
				id, rec.OutputTokens, rec.OutputTokensSource, rec.InputTokensSource)
		}
		if rec.RequestLatencyMs == nil || *rec.RequestLatencyMs != rec.DurationMs {
			t.Errorf("%s: request latency %v, want the duration %.3f ms", id, rec.RequestLatencyMs, rec.DurationMs)
			continue
		}
		// The body is written once: the latency lies between the mock's write and the
		// client's own measurement of the whole exchange.
		body := msSince(tr.Arrived, tr.Events[len(tr.Events)-1].At)
		if *rec.RequestLatencyMs < body-causalSlackMs || *rec.RequestLatencyMs > elapsed[i] {
			t.Errorf("%s: request latency %.3f ms, want between the mock's write at %.3f ms and the client's %.3f ms",
				id, *rec.RequestLatencyMs, body, elapsed[i])
		}
	}
}

// TestSummaryCounts checks that /llmtap/summary groups requests by model, class and status
// class, and counts each one once.
func TestSummaryCounts(t *testing.T) {
	cfg := streamingMock()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	up := startUpstream(t, cfg)
	p, _ := loadProxy(t, "", proxySite(up.addr, ""))
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	send := func(model string, stream bool, n int) {
		for range n {
			resp, _, err := testkit.PostJSON(t.Context(), c, url, "", chatBody(model, 4, stream, stream))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%v %v", resp, err)
			}
		}
	}
	send("summary-a", true, 5)
	send("summary-a", false, 3)
	send("summary-b", true, 2)

	groups, inFlight, dropped := p.summary(t)
	if inFlight != 0 || dropped != 0 {
		t.Errorf("in flight %d, dropped %d; want 0, 0", inFlight, dropped)
	}
	for _, tc := range []struct {
		key      string
		requests float64
		ttft     int64 // only streams have a TTFT
	}{
		{"summary-a/live/2xx", 8, 5},
		{"summary-b/live/2xx", 2, 2},
	} {
		g, ok := groups[tc.key]
		if !ok {
			t.Errorf("no cumulative group %s among %v", tc.key, keys(groups))
			continue
		}
		if g.RequestCount.Avg != tc.requests || g.TTFT.Count != tc.ttft {
			t.Errorf("%s: request_count %v, ttft count %d; want %v, %d", tc.key, g.RequestCount.Avg, g.TTFT.Count, tc.requests, tc.ttft)
		}
	}
	if len(groups) != 2 {
		t.Errorf("cumulative groups %v, want exactly the two models", keys(groups))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// reloadVia posts a Caddyfile to the admin API's /load, as `caddy reload` does.
func reloadVia(t *testing.T, p *proxy, caddyfile string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.admin+"/load", strings.NewReader(caddyfile))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/caddyfile")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /load: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("POST /load: %s: %s", resp.Status, b.String())
	}
}

// TestReloadUnderTraffic reloads the config while streams are in flight: the streams finish
// intact on the old config, the measurement engine (and its counts) carries over.
func TestReloadUnderTraffic(t *testing.T) {
	const streams, tokens, after = 16, 200, 4
	cfg := streamingMock()
	cfg.TTFT, cfg.OutputTokens = 10*time.Millisecond, tokens
	up := startUpstream(t, cfg)
	p, cf := loadProxy(t, "", proxySite(up.addr, ""))
	engine := llmtap.ActiveTap()
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"

	started := make(chan struct{}, streams)
	bodies := make([][]byte, streams)
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(chatBody("e2e-model", tokens, true, true)))
			req.Header.Set("X-Request-Id", fmt.Sprintf("reload-%d", i))
			resp, err := c.Do(req)
			started <- struct{}{}
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, errs[i] = b.ReadFrom(resp.Body)
			bodies[i] = b.Bytes()
		})
	}
	for range streams {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the streams did not start within 10 s")
		}
	}
	if n := engine.InFlight(); n != streams {
		t.Fatalf("%d requests in flight before the reload, want %d", n, streams)
	}
	reloadVia(t, p, strings.Replace(cf, "\tllmtap\n", "\tllmtap {\n\t\tmax_event_size 512KiB\n\t}\n", 1))
	wg.Wait()
	// The old server closed its keep-alive connections; a request sent on one as it closes
	// is reset, as with any reload, so send the next requests on fresh connections. A new
	// client, not CloseIdleConnections: the transport puts a connection back in its pool just
	// after the body's EOF is read, so closing the pool can miss the last one.
	c = reloadedClient(t)
	if llmtap.ActiveTap() != engine {
		t.Fatal("the reload replaced the measurement engine; counts would be lost")
	}
	for i := range streams {
		id := fmt.Sprintf("reload-%d", i)
		sent, _ := up.sentBody(id)
		if errs[i] != nil || len(sent) == 0 || !bytes.Equal(bodies[i], sent) {
			t.Errorf("%s: error %v, got %d bytes, the mock sent %d", id, errs[i], len(bodies[i]), len(sent))
		}
	}
	for i := range after {
		resp, _, err := testkit.PostJSON(t.Context(), c, url, fmt.Sprintf("after-%d", i), chatBody("e2e-model", 4, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request after the reload: %v %v", resp, err)
		}
	}
	recs := p.records(t)
	for i := range streams {
		id := fmt.Sprintf("reload-%d", i)
		if r := recs[id]; r.Error != "" || r.ContentEvents != tokens || r.OutputTokens != tokens {
			t.Errorf("%s: error %q, %d content events, %d tokens; want none, %d, %d", id, r.Error, r.ContentEvents, r.OutputTokens, tokens, tokens)
		}
	}
	groups, _, _ := p.summary(t)
	if g := groups["e2e-model/live/2xx"]; g.RequestCount.Avg != streams+after {
		t.Errorf("request_count %v after the reload, want %d (groups %v)", g.RequestCount.Avg, streams+after, keys(groups))
	}
}

// TestPrometheusMetrics checks the OpenTelemetry-named histograms on the admin /metrics and
// that a reload does not reset them.
func TestPrometheusMetrics(t *testing.T) {
	cfg := streamingMock()
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	up := startUpstream(t, cfg)
	p, cf := loadProxy(t, "", proxySite(up.addr, ""))
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	// The collectors are process-wide: a model name of its own isolates this test's series.
	model := ownName("e2e-metrics-model-")
	labels := map[string]string{"model": model, "class": "live", "status_class": "2xx"}
	send := func(n int) {
		for range n {
			resp, _, err := testkit.PostJSON(t.Context(), c, url, "", chatBody(model, 8, true, true))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%v %v", resp, err)
			}
		}
	}
	check := func(when string, want float64) {
		t.Helper()
		for _, name := range []string{
			"gen_ai_server_time_to_first_token_seconds_count",
			"gen_ai_server_request_duration_seconds_count",
			"gen_ai_server_time_per_output_token_seconds_count",
			"llmtap_requests_total",
		} {
			if got := p.metricValue(t, name, labels); got != want {
				t.Errorf("%s: %s%v = %v, want %v", when, name, labels, got, want)
			}
		}
		tokenLabels := map[string]string{"model": model, "gen_ai_token_type": "output"}
		if got := p.metricValue(t, "gen_ai_client_token_usage_sum", tokenLabels); got != 8*want {
			t.Errorf("%s: output token sum %v, want %v", when, got, 8*want)
		}
	}
	send(6)
	check("before the reload", 6)
	reloadVia(t, p, strings.Replace(cf, "\tllmtap\n", "\tllmtap {\n\t\tmax_request_body 64KiB\n\t}\n", 1))
	c = reloadedClient(t) // the old server closed the connections (see TestReloadUnderTraffic)
	send(4)
	check("after the reload", 10)
}

// TestErrorClasses checks how failures are recorded: a client that goes away, an upstream
// error status, an upstream that cannot be reached.
func TestErrorClasses(t *testing.T) {
	longCfg := streamingMock()
	longCfg.TTFT, longCfg.OutputTokens = 5*time.Millisecond, 400
	long := startUpstream(t, longCfg)
	failCfg := streamingMock()
	failCfg.ErrorRate = 1
	failing := startUpstream(t, failCfg)
	down := testkit.FreeAddr(t) // nothing listens there
	p, _ := loadProxy(t, "", proxySite(long.addr, ""), proxySite(failing.addr, ""), proxySite(down, ""))
	c := newClient(t)

	t.Run("client_canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.sites[0]+"/v1/chat/completions", bytes.NewReader(chatBody("e2e-model", 400, true, true)))
		req.Header.Set("X-Request-Id", "cancel-1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read until a few content events arrived, then go away mid-stream.
		buf := make([]byte, 4096)
		var got []byte
		for bytes.Count(got, []byte(`"content":" `)) < 3 {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("stream ended early: %v", err)
			}
		}
		cancel()
		resp.Body.Close()
		rec := p.records(t)["cancel-1"]
		if rec.Error != record.ErrCanceled || rec.Status != 200 || !rec.Stream {
			t.Errorf("error %q status %d stream %v; want %q, 200, true", rec.Error, rec.Status, rec.Stream, record.ErrCanceled)
		}
		if rec.ContentEvents < 3 || rec.ContentEvents >= 400 {
			t.Errorf("%d content events measured; want the few before the cancel", rec.ContentEvents)
		}
	})

	t.Run("http_status", func(t *testing.T) {
		resp, body, err := testkit.PostJSON(t.Context(), c, p.sites[1]+"/v1/chat/completions", "fail-1", chatBody("e2e-model", 8, true, true))
		if err != nil || resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%v %v; want a 500", resp, err)
		}
		if sent, _ := failing.sentBody("fail-1"); !bytes.Equal(body, sent) {
			t.Errorf("the client got %q, the mock sent %q", body, sent)
		}
		rec := p.records(t)["fail-1"]
		if rec.Error != record.ErrHTTP || rec.Status != 500 || rec.TTFTMs != nil || rec.RequestLatencyMs != nil {
			t.Errorf("error %q status %d ttft %v latency %v; want %q, 500, null, null",
				rec.Error, rec.Status, rec.TTFTMs, rec.RequestLatencyMs, record.ErrHTTP)
		}
	})

	t.Run("upstream_failure", func(t *testing.T) {
		resp, _, err := testkit.PostJSON(t.Context(), c, p.sites[2]+"/v1/chat/completions", "down-1", chatBody("e2e-model", 8, true, true))
		if err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%v %v; want a 502", resp, err)
		}
		rec := p.records(t)["down-1"]
		if rec.Error != record.ErrUpstream || rec.Status != 502 || rec.ErrorMsg == "" {
			t.Errorf("error %q (%q) status %d; want %q with a message, 502", rec.Error, rec.ErrorMsg, rec.Status, record.ErrUpstream)
		}
		if rec.Model != "e2e-model" {
			t.Errorf("model %q; want the one the request named, e2e-model (no upstream read the body)", rec.Model)
		}
		// A request that names no model: the record and the metric label spell it alike.
		resp, _, err = testkit.PostJSON(t.Context(), c, p.sites[2]+"/v1/chat/completions", "down-2", []byte(`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%v %v; want a 502", resp, err)
		}
		if rec := p.records(t)["down-2"]; rec.Model != record.UnknownModel {
			t.Errorf("model %q for a request naming none; want %q", rec.Model, record.UnknownModel)
		}
		found := false
		for _, s := range p.metricSamples(t, "llmtap_requests_total") {
			found = found || s.labels["model"] == record.UnknownModel
		}
		if !found {
			t.Errorf("no llmtap_requests_total series with model=%q", record.UnknownModel)
		}
	})
}

// TestRequestIDPlaceholder checks {http.vars.llmtap.request_id}: a deferred header (applied
// when the response is written, after llmtap has set the variable) carries the id the record
// is filed under, generated when the client sent none.
func TestRequestIDPlaceholder(t *testing.T) {
	cfg := streamingMock()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	up := startUpstream(t, cfg)
	p, _ := loadProxy(t, "", proxySite(up.addr, "\theader >X-Llmtap-Request-Id {http.vars.llmtap.request_id}\n"))
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	var ids []string
	for _, sent := range []string{"", "", "client-chosen-id"} {
		resp, _, err := testkit.PostJSON(t.Context(), c, url, sent, chatBody("e2e-model", 4, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v %v", resp, err)
		}
		id := resp.Header.Get("X-Llmtap-Request-Id")
		if id == "" || strings.Contains(id, "{") {
			t.Fatalf("X-Llmtap-Request-Id %q; want the request id", id)
		}
		if sent != "" && id != sent {
			t.Errorf("X-Llmtap-Request-Id %q; want the client's %q", id, sent)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Errorf("two requests got the same generated id %q", ids[0])
	}
	recs := p.records(t)
	for _, id := range ids {
		if r, ok := recs[id]; !ok || r.Status != 200 || r.Error != "" {
			t.Errorf("id %q: record found %v, status %d, error %q; want a successful record", id, ok, r.Status, r.Error)
		}
	}
}
