package llmtap_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// The soak's size. Without flags, `go test` runs a short version (under -race in `make unit`);
// `make soak-smoke` (part of `make test`) runs 2 minutes of 1,000 streams and `make soak` 30
// minutes, both through these flags.
var (
	soakDuration = flag.Duration("soak.duration", 20*time.Second, "how long TestSoak sends traffic")
	soakStreams  = flag.Int("soak.streams", 200, "concurrent client streams in TestSoak")
	soakReload   = flag.Duration("soak.reload", 3*time.Second, "how often TestSoak reloads the config (memory is sampled at each reload)")
	soakReport   = flag.String("soak.report", "", "file TestSoak writes its samples and counts to, as JSON")
)

// Bounds of the memory comparison between the first and the last third of the samples (taken
// after a forced GC at each reload, under the same steady load). A leak of one small object per
// request (a record, a meter, a goroutine stack) over the 30-minute run's ~300,000 requests is
// tens of MiB and fails them; the slack covers what a steady load legitimately moves (buffers in
// sync.Pools, the GC's target, stream timing at the moment of the sample).
const (
	soakHeapFactor = 1.25
	soakHeapSlack  = 16 << 20
	soakRSSFactor  = 1.25
	soakRSSSlack   = 48 << 20
	// soakGoroutineSlack is how many more goroutines the last third may hold on average than
	// the first: every stream holds a handful (client, Caddy's connection, the proxy's upstream
	// connection, the mock), so a leak of one per request shows up as thousands.
	soakGoroutineFactor = 1.25
)

// soakWarmup is how long after the start memory samples are left out of the comparison: the
// engine's rolling window (60 s in six 10 s slots) allocates its histograms as the slots fill
// (measured: the heap rises by ~60 MiB over the first minute at 1,000 streams, then holds),
// so growth is judged on the samples after it. Short runs skip their first half instead.
func soakWarmup(d time.Duration) time.Duration { return min(75*time.Second, d/2) }

// soakKind is one kind of client request in the mix.
type soakKind int

const (
	kindChatStream soakKind = iota // streaming chat completion, to the end
	kindChatUnary                  // non-streaming chat completion
	kindCompletion                 // streaming legacy completion
	kindCancel                     // streaming chat the client abandons after the first content event
	kindTooLong                    // max_tokens above the mock's limit: HTTP 400 from the mock
	kindNoRoute                    // a path the mock does not serve: HTTP 404 from the mock
)

// soakMix is the share of each kind, in percent.
var soakMix = []struct {
	kind soakKind
	pct  int
}{
	{kindChatStream, 50}, {kindChatUnary, 15}, {kindCompletion, 15}, {kindCancel, 10}, {kindTooLong, 5}, {kindNoRoute, 5},
}

// soakOutcome is what the client saw of one request, keyed like the engine's summary.
type soakOutcome struct {
	id          string // the X-Request-Id sent
	model       string
	statusClass string // "2xx", "4xx", "5xx"
	failure     string // the error class the engine must record, "" for success
	canceled    bool   // a cancel-kind request the client abandoned after a content event
	cancelKind  bool   // a cancel-kind request whose stream failed before a content event
}

// soakTally counts outcomes; it is safe for concurrent use.
type soakTally struct {
	mu       sync.Mutex
	byGroup  map[string]int64 // class/statusClass -> requests
	byError  map[string]int64 // error class -> requests
	ok       int64
	total    int64
	clientEr []string // unexpected client-side errors (a few kept)
	nClient  int64
	// connFailed holds the ids of requests that failed at the connection level (reset while
	// connecting, or closed before any response); see connectionLevel.
	connFailed []string
	// cancelAsked counts the cancel-kind requests the client abandoned after a content event.
	cancelAsked int64
	// cancelFailed counts the cancel-kind requests whose stream failed before a content event.
	cancelFailed int64
}

func (t *soakTally) add(o soakOutcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byGroup["live/"+o.statusClass]++
	if o.canceled {
		t.cancelAsked++
	}
	if o.cancelKind {
		t.cancelFailed++
	}
	if o.failure == "" {
		t.ok++
	} else {
		t.byError[o.failure]++
	}
	t.total++
}

func (t *soakTally) clientError(id string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if connectionLevel(err) {
		t.connFailed = append(t.connFailed, id)
		return
	}
	t.nClient++
	if len(t.clientEr) < 5 {
		t.clientEr = append(t.clientEr, err.Error())
	}
}

// Connection-level failures. On Linux Caddy listens with SO_REUSEPORT: a reload binds a new
// socket beside the old one and closes the old one, and the kernel resets the connections still
// in the old socket's accept queue (https://lwn.net/Articles/542629/); an old server that is
// draining also closes connections that sent no request yet. Clients see "connection reset by
// peer" while connecting, or EOF before any response. Such a request never reached a handler,
// so it cannot have been failed by llmtap: TestSoak counts them, reports them, and checks by
// request id that none of them is in the recording (which holds one line per request llmtap
// measured).
// connectionLevel reports whether err is a failure before any response: a reset while
// connecting or a connection closed before the response headers.
func connectionLevel(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "connection reset by peer") || strings.HasSuffix(msg, ": EOF")
}

// soakSample is one memory sample, taken after a forced GC.
type soakSample struct {
	At         float64 `json:"at_s"`
	HeapAlloc  uint64  `json:"heap_alloc_bytes"`
	HeapInuse  uint64  `json:"heap_inuse_bytes"`
	RSS        uint64  `json:"rss_bytes"`
	Goroutines int     `json:"goroutines"`
	InFlight   int64   `json:"in_flight"`
	Requests   int64   `json:"requests_completed"`
}

// TestSoak runs Caddy with llmtap (recording on) in front of the mock under mixed traffic —
// streaming and non-streaming chat, streaming completions, client cancels, 400 and 404 answers
// and the mock's random 500s and mid-stream errors — from a fixed number of concurrent client
// streams, and reloads a changed config (max_event_size and the recording's flush interval
// alternate) every -soak.reload. It then checks that nothing was lost (every request the
// clients completed is in the engine's summary, in /metrics and in the recorded files, under
// the status class and error class the client saw), that the heap, RSS and goroutine count
// of the last third of the reload samples did not grow past the bounds above, and, after
// shutdown, that no goroutine was left behind.
func TestSoak(t *testing.T) {
	// Registered first, so it runs last: after Caddy and the mock are stopped.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// Disabling the admin endpoint stops the admin server Caddy keeps between configs.
		if err := testkit.Shutdown(); err != nil {
			t.Error(err)
		}
		if err := goleak.Find(append(leakOptions(), before)...); err != nil {
			t.Errorf("goroutines left after shutdown: %v", err)
		}
	})

	streams, duration, every := *soakStreams, *soakDuration, *soakReload
	up := startUpstream(t, mock.Config{
		Model:           "soak-a",
		TTFT:            200 * time.Millisecond,
		ITL:             500 * time.Millisecond, // slow, so 1,000 streams are ~2,000 events/s
		JitterCV:        0.3,
		RoleChunk:       true,
		MaxOutputTokens: 1000,
		PromptCounter:   mock.PromptApprox,
		ErrorRate:       0.02,
		StreamErrorRate: 0.02,
		Seed:            10,
	})
	dir := filepath.Join(t.TempDir(), "rec")
	const optA, optB = "max_event_size 1MiB\n\t\trecord %s {\n\t\t\tflush_interval 1s\n\t\t}", "max_event_size 2MiB\n\t\trecord %s {\n\t\t\tflush_interval 2s\n\t\t}"
	// The upstream does not get the request ids: the e2e helpers' tee keeps every response
	// whose request carries one, which over a soak is a leak of the harness, not of llmtap. A
	// starved machine (other jobs on two cores) can take seconds to accept a connection, so the
	// dial timeout is raised past Caddy's 3 s: a 502 from a slow accept is not llmtap's doing.
	body := "\tllmtap {\n\t\t%s\n\t}\n\treverse_proxy " + up.addr + " {\n\t\tflush_interval -1\n\t\theader_up -X-Request-Id\n\t\ttransport http {\n\t\t\tdial_timeout 30s\n\t\t}\n\t}"
	p, cf := loadProxy(t, "", site{body: fmt.Sprintf(body, fmt.Sprintf(optA, dir))})
	cfA, cfB := cf, strings.Replace(cf, fmt.Sprintf(optA, dir), fmt.Sprintf(optB, dir), 1)
	if cfA == cfB {
		t.Fatal("the reload config is the same as the first")
	}

	// Keep-alives are off: a reload closes the old server's idle connections, and a POST sent
	// on one of them as it closes would fail without reaching Caddy, which is not llmtap's
	// doing and would blur the count. A fresh connection per request is cheap on loopback.
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	tally := &soakTally{byGroup: map[string]int64{}, byError: map[string]int64{}}
	// The Prometheus counters are process-wide and keep what earlier tests counted: the soak
	// compares what it added.
	var metricBase float64
	for _, s := range p.metricSamples(t, "llmtap_requests_total") {
		metricBase += s.value
	}

	start := time.Now()
	ctx, stop := context.WithDeadline(t.Context(), start.Add(duration))
	defer stop()
	var wg sync.WaitGroup
	for w := range streams {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(11, uint64(w)))
			for n := 0; ctx.Err() == nil; n++ {
				o, err := soakRequest(client, p.sites[0], rng, w, n)
				if err != nil {
					tally.clientError(o.id, err)
					continue
				}
				tally.add(o)
			}
		})
	}

	var samples []soakSample
	var reloads int
	sample := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		tally.mu.Lock()
		done := tally.total
		tally.mu.Unlock()
		s := soakSample{At: time.Since(start).Seconds(), HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse,
			RSS: rssBytes(t), Goroutines: runtime.NumGoroutine(), InFlight: llmtap.ActiveTap().InFlight(), Requests: done}
		samples = append(samples, s)
		t.Logf("t=%4.0fs heap %6.1f MiB rss %6.1f MiB goroutines %5d in flight %4d completed %d",
			s.At, float64(s.HeapAlloc)/(1<<20), float64(s.RSS)/(1<<20), s.Goroutines, s.InFlight, s.Requests)
	}
	tick := time.NewTicker(every)
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-tick.C:
			if time.Until(start.Add(duration)) < every/2 {
				continue // too close to the end for a full interval of load after it
			}
			sample()
			reloads++
			next := cfA
			if reloads%2 == 1 {
				next = cfB
			}
			testkit.Load(t, testkit.Adapt(t, fmt.Sprint("reload ", reloads), next))
		}
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start)

	groups, inFlight, dropped := soakSummary(t, p)
	requestsTotal := p.metricSamples(t, "llmtap_requests_total")
	if err := caddy.Stop(); err != nil { // flushes and closes the recording
		t.Fatal(err)
	}
	recs := recordLines(t, dir)
	recorded := len(recs)
	raced, completed := reconcileCancels(t, recs, tally)
	checkNeverMeasured(t, recs, tally.connFailed)

	t.Logf("%d streams, %v, %d reloads: %d requests (%.0f/s), %d ok, errors %v (%d cancels overtaken by a stream error, %d by the stream's end); %d connection-level failures (never reached llmtap), %d unexpected client errors",
		streams, elapsed.Round(time.Second), reloads, tally.total, float64(tally.total)/elapsed.Seconds(), tally.ok, tally.byError, raced, completed, len(tally.connFailed), tally.nClient)
	if *soakReport != "" {
		writeSoakReport(t, *soakReport, map[string]any{
			"streams": streams, "duration_s": elapsed.Seconds(), "reload_every_s": every.Seconds(), "reloads": reloads,
			"requests": tally.total, "ok": tally.ok, "errors": tally.byError, "client_errors": tally.nClient, "connection_failures": len(tally.connFailed), "cancels_overtaken_by_stream_error": raced, "cancels_after_stream_end": completed,
			"recorded": recorded, "samples": samples,
		})
	}

	// Nothing failed on the client's side that the mix did not ask for.
	if tally.nClient > 0 {
		t.Errorf("%d requests failed on the client side (first: %q)", tally.nClient, tally.clientEr)
	}
	if tally.total < int64(streams) {
		t.Fatalf("only %d requests completed with %d streams", tally.total, streams)
	}

	// No lost counts: the engine, /metrics and the files hold exactly what the clients saw.
	if inFlight != 0 || dropped != 0 {
		t.Errorf("summary: %d in flight, %d records dropped after the load; want 0 and 0", inFlight, dropped)
	}
	engineErrs := map[string]int64{}
	for key, want := range tally.byGroup {
		g := groups[key]
		if got := g.ok + g.errors; got != want {
			t.Errorf("group %s: the engine counted %d requests, the clients completed %d", key, got, want)
		}
	}
	var engineTotal, engineOK int64
	for key, g := range groups {
		if tally.byGroup[key] == 0 {
			t.Errorf("group %s (%d requests) in the summary, but the clients sent none there", key, g.ok+g.errors)
		}
		engineTotal += g.ok + g.errors
		engineOK += g.ok
		for e, n := range g.byError {
			engineErrs[e] += n
		}
	}
	if engineOK != tally.ok {
		t.Errorf("the engine counted %d successful requests, the clients %d", engineOK, tally.ok)
	}
	for _, e := range []string{"http_status", "stream_error", "client_canceled", "truncated", "upstream_failure", "malformed"} {
		if engineErrs[e] != tally.byError[e] {
			t.Errorf("error class %s: the engine counted %d, the clients saw %d", e, engineErrs[e], tally.byError[e])
		}
	}
	metricTotal := -metricBase
	for _, s := range requestsTotal {
		metricTotal += s.value
	}
	if int64(metricTotal) != tally.total {
		t.Errorf("llmtap_requests_total sums to %.0f, the clients completed %d", metricTotal, tally.total)
	}
	if int64(recorded) != tally.total {
		t.Errorf("the recording holds %d records across %d reloads, the clients completed %d", recorded, reloads, tally.total)
	}
	if engineTotal != tally.total {
		t.Errorf("the engine counted %d requests in all, the clients completed %d", engineTotal, tally.total)
	}

	// No growth: the last third of the samples against the first, after the warm-up.
	var steady []soakSample
	for _, s := range samples {
		if s.At >= soakWarmup(duration).Seconds() {
			steady = append(steady, s)
		}
	}
	if len(steady) < 3 && duration < time.Minute {
		// The short run under -race on a loaded machine can take a reload longer than its
		// interval, and then misses samples; its counts are judged above, its memory by
		// soak-smoke's 2 minutes (which must have its samples).
		t.Logf("%d memory samples after the %v warm-up: too few to judge growth in a short run", len(steady), soakWarmup(duration))
		return
	}
	if len(steady) < 3 {
		t.Fatalf("%d memory samples after the %v warm-up; the run needs at least 3 (-soak.duration %v, -soak.reload %v)", len(steady), soakWarmup(duration), duration, every)
	}
	third := len(steady) / 3
	first, last := steady[:third], steady[len(steady)-third:]
	mean := func(ss []soakSample, f func(soakSample) float64) float64 {
		var sum float64
		for _, s := range ss {
			sum += f(s)
		}
		return sum / float64(len(ss))
	}
	for _, c := range []struct {
		name          string
		f             func(soakSample) float64
		factor, slack float64
	}{
		{"heap", func(s soakSample) float64 { return float64(s.HeapAlloc) }, soakHeapFactor, soakHeapSlack},
		{"RSS", func(s soakSample) float64 { return float64(s.RSS) }, soakRSSFactor, soakRSSSlack},
		{"goroutines", func(s soakSample) float64 { return float64(s.Goroutines) }, soakGoroutineFactor, 0},
	} {
		a, b := mean(first, c.f), mean(last, c.f)
		t.Logf("%s: first third %.1f, last third %.1f (x%.3f)", c.name, a, b, b/a)
		if b > a*c.factor+c.slack {
			t.Errorf("%s grew from %.0f (first third of the samples) to %.0f (last third), over the bound %.2fx + %.0f", c.name, a, b, c.factor, c.slack)
		}
	}
}

// soakRequest sends one request of a kind drawn from the mix and says what the engine must
// have recorded for it. An error is a failure the mix did not ask for.
func soakRequest(c *http.Client, base string, rng *rand.Rand, worker, seq int) (soakOutcome, error) {
	kind, n := kindChatStream, rng.IntN(100)
	for _, m := range soakMix {
		if n < m.pct {
			kind = m.kind
			break
		}
		n -= m.pct
	}
	model := []string{"soak-a", "soak-b", "soak-c"}[rng.IntN(3)]
	tokens := 4 + rng.IntN(17)
	path, stream := "/v1/chat/completions", true
	id := fmt.Sprintf("soak-%d-%d", worker, seq)
	if kind == kindCancel {
		id = fmt.Sprintf("soak-cancel-%d-%d", worker, seq)
	}
	msg := map[string]any{"model": model, "max_tokens": tokens, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "Soak question " + strconv.Itoa(worker)}}}
	switch kind {
	case kindChatUnary:
		msg["stream"], stream = false, false
	case kindCompletion:
		path = "/v1/completions"
		delete(msg, "messages")
		msg["prompt"] = "Soak prompt " + strconv.Itoa(worker)
	case kindCancel:
		msg["max_tokens"] = 20
	case kindTooLong:
		msg["max_tokens"] = 100000
	case kindNoRoute:
		path = "/v1/no-such-route"
	}
	if rng.IntN(2) == 0 && stream {
		msg["stream_options"] = map[string]bool{"include_usage": true}
	}
	body, _ := json.Marshal(msg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return soakOutcome{id: id}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := c.Do(req)
	if err != nil {
		return soakOutcome{id: id}, err
	}
	defer resp.Body.Close()
	o := soakOutcome{id: id, model: model, statusClass: strconv.Itoa(resp.StatusCode/100) + "xx"}
	if resp.StatusCode == http.StatusBadGateway {
		// Caddy's answer when it could not complete the exchange with the upstream (the mock
		// never sends 502): a connection to the mock reset or closed under it. The engine
		// records those as upstream failures; the model may be unknown when the request body
		// was never read, which is why groups are compared by class and status class.
		o.failure = "upstream_failure"
		_, err := io.Copy(io.Discard, resp.Body)
		return o, err
	}
	if resp.StatusCode >= 400 {
		o.failure = "http_status"
		_, err := io.Copy(io.Discard, resp.Body)
		return o, err
	}
	if kind == kindCancel {
		// Read up to the first content event (the role chunk is not one), then leave: the
		// stream has 20 tokens at 0.5 s each, so it is far from its end.
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
				cancel()
				o.failure, o.canceled = "client_canceled", true
				return o, nil
			}
			if strings.Contains(line, `"error"`) {
				break
			}
		}
		if err := sc.Err(); err != nil {
			return o, err
		}
		// The mock failed the stream before its first token (its stream error rate).
		o.failure, o.cancelKind = "stream_error", true
		return o, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return o, err
	}
	if stream && bytes.Contains(b, []byte(`data: {"error"`)) {
		o.failure = "stream_error"
	}
	if kind != kindChatUnary && !bytes.Contains(b, []byte("data: [DONE]")) {
		return o, fmt.Errorf("a %s stream ended without [DONE]: %q", path, b[max(0, len(b)-200):])
	}
	return o, nil
}

// reconcileCancels settles the races the client cannot see. A cancel-kind request leaves right
// after its first content event; but when the mock failed the stream a token later, the error
// event and [DONE] may have passed llmtap before the client's cancel arrived, and on a starved
// machine the client may read its first event only after the whole stream was sent. Either
// way the stream completed and the engine is right to say so. From the recorded files (one
// line per request; ids "soak-cancel-…") it counts both, checks that each such stream error
// carries the mock's injected error and each such success ended with a finish reason, and
// moves them from the client's cancels to its stream errors and successes. It returns how
// many of each there were.
func reconcileCancels(t *testing.T, recs []record.Record, tally *soakTally) (raced, completed int64) {
	t.Helper()
	var canceled, streamErr int64
	for _, r := range recs {
		if !strings.HasPrefix(r.RequestID, "soak-cancel-") {
			continue
		}
		switch r.Error {
		case record.ErrCanceled:
			canceled++
		case record.ErrStream:
			streamErr++
			if !strings.Contains(r.ErrorMsg, "injected stream error") {
				t.Errorf("%s: a stream error without the mock's injected error: %q", r.RequestID, r.ErrorMsg)
			}
		case "":
			completed++
			if r.Finish == "" {
				t.Errorf("%s: a canceled stream recorded as complete without a finish reason", r.RequestID)
			}
		case record.ErrHTTP, record.ErrUpstream:
			// The mock answered 500 at once (its error rate), or Caddy 502; the client saw it.
		default:
			t.Errorf("%s: a canceled request recorded as %q (%s)", r.RequestID, r.Error, r.ErrorMsg)
		}
	}
	raced = streamErr - tally.cancelFailed
	if raced < 0 || canceled != tally.cancelAsked-raced-completed {
		t.Errorf("cancel-kind requests: the files hold %d canceled, %d stream errors and %d complete; the clients canceled %d and saw %d fail first",
			canceled, streamErr, completed, tally.cancelAsked, tally.cancelFailed)
		return 0, 0
	}
	tally.byError[record.ErrCanceled] -= raced + completed
	tally.byError[record.ErrStream] += raced
	tally.ok += completed
	return raced, completed
}

// checkNeverMeasured fails when a request that failed at the connection level is in the
// recording: then it reached llmtap, and its failure needs explaining.
func checkNeverMeasured(t *testing.T, recs []record.Record, ids []string) {
	t.Helper()
	failed := make(map[string]bool, len(ids))
	for _, id := range ids {
		failed[id] = true
	}
	for _, r := range recs {
		if failed[r.RequestID] {
			t.Errorf("%s failed at the connection level on the client, but llmtap measured it: %s %q", r.RequestID, r.Error, r.ErrorMsg)
		}
	}
}

// soakGroup is what TestSoak reads of a cumulative summary group.
type soakGroup struct {
	ok, errors int64
	byError    map[string]int64
}

// soakSummary fetches /llmtap/summary once no request is in flight and returns its cumulative
// groups summed by class/status class.
func soakSummary(t *testing.T, p *proxy) (map[string]soakGroup, int64, uint64) {
	t.Helper()
	waitIdle(t)
	var doc struct {
		InFlight       int64  `json:"in_flight"`
		RecordsDropped uint64 `json:"records_dropped"`
		Summary        struct {
			Groups []struct {
				Class        string                `json:"class"`
				StatusClass  string                `json:"status_class"`
				Window       string                `json:"window"`
				RequestCount struct{ Avg float64 } `json:"request_count"`
				ErrorCount   struct{ Avg float64 } `json:"error_request_count"`
				Errors       map[string]int64      `json:"errors"`
			} `json:"groups"`
		} `json:"summary"`
	}
	b := p.adminGet(t, "/llmtap/summary")
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decoding the summary: %v", err)
	}
	out := map[string]soakGroup{}
	for _, g := range doc.Summary.Groups {
		if g.Window != "cumulative" {
			continue
		}
		key := g.Class + "/" + g.StatusClass
		sum := out[key]
		if sum.byError == nil {
			sum.byError = map[string]int64{}
		}
		sum.ok += int64(g.RequestCount.Avg)
		sum.errors += int64(g.ErrorCount.Avg)
		for e, n := range g.Errors {
			sum.byError[e] += n
		}
		out[key] = sum
	}
	return out, doc.InFlight, doc.RecordsDropped
}

// rssBytes is the resident set size of the test process, from /proc/self/statm.
func rssBytes(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatalf("reading the RSS: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatalf("parsing /proc/self/statm %q: %v", b, err)
	}
	return pages * uint64(os.Getpagesize())
}

// writeSoakReport writes v as indented JSON to path.
func writeSoakReport(t *testing.T, path string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Errorf("writing the soak report: %v", err)
	}
}
