package llmtap_test

// End-to-end tests of mirroring: real Caddy loaded from a Caddyfile, the llmtap handler with a
// mirror, reverse_proxy to one mock inference server (live) and the mirror copies going to a
// second one (or to a dead port, or to a server that never answers).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/llmtap/llmtap/internal/sample"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// mirrorMock is the upstream of the mirroring tests: short streams without delays, so a
// thousand sequential requests take about a second, and a trace per request (the arrival log
// with ids) on a log large enough for all of them.
func mirrorMock(seed int64) mock.Config {
	return mock.Config{
		Model:         "mirror-model",
		OutputTokens:  4,
		RoleChunk:     true,
		LogEvents:     true,
		LogLimit:      4096,
		PromptCounter: mock.PromptApprox,
		Seed:          seed,
	}
}

// headerLog is an upstream wrapper that keeps the headers of every request by X-Request-Id.
type headerLog struct {
	next http.Handler
	mu   sync.Mutex
	seen map[string]http.Header
}

func (h *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen[r.Header.Get("X-Request-Id")] = r.Header.Clone()
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerLog) all() map[string]http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.seen)
}

// stall is an upstream that reads the request and never answers until the request is
// canceled.
var stall = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body) // then the server notices when the client goes away
	<-r.Context().Done()
})

// mirrorSite is llmtap with a mirror block in front of the live upstream.
func mirrorSite(live, mirrorBlock string) site {
	return site{body: "\tllmtap {\n" + mirrorBlock + "\n\t}\n\treverse_proxy " + live}
}

// sendSequential sends n streaming chat requests one after another with ids prefix-0…, with
// credentials and a custom header, and returns status and body per id.
func sendSequential(t *testing.T, p *proxy, prefix string, n int) map[string][]byte {
	t.Helper()
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	out := make(map[string][]byte, n)
	body := chatBody("mirror-model", 4, true, true)
	for i := range n {
		id := prefix + strconv.Itoa(i)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("Authorization", "Bearer live-secret")
		req.Header.Set("X-Api-Key", "live-key")
		req.Header.Set("Cookie", "session=live")
		req.Header.Set("X-Tenant", "acme")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, read error %v: %s", id, resp.StatusCode, err, b)
		}
		out[id] = b
	}
	return out
}

// createdField is the one part of a mock response that depends on the wall clock (the arrival
// second); it is blanked before comparing two runs.
var createdField = regexp.MustCompile(`"created":\d+`)

// mirrorState fetches GET /llmtap/mirror.
func mirrorState(t *testing.T, p *proxy) (doc struct {
	Counters mirror.Counters       `json:"counters"`
	Gate     mirror.GateState      `json:"gate"`
	Pairs    mirror.Summary        `json:"pairs"`
	Verdicts []mirror.ModelVerdict `json:"verdicts"`
}) {
	t.Helper()
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/mirror"), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// waitMirrorIdle waits (bounded) until no mirror copy is in flight, then for the records.
func waitMirrorIdle(t *testing.T, p *proxy) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for mirrorState(t, p).Counters.InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatal("mirror copies still in flight after 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitIdle(t)
}

// promValue reads an unlabelled sample (or one with the given label text) from /metrics.
func promValue(t *testing.T, p *proxy, series string) float64 {
	t.Helper()
	for line := range strings.Lines(string(p.adminGet(t, "/metrics"))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no sample %s in /metrics", series)
	return 0
}

// TestMirrorSampleAndPairs runs 1,000 sequential live requests through Caddy twice, without
// and with a 10% mirror to a second mock, and checks that:
//   - the client received exactly the bytes the live mock wrote, and the same bytes as without
//     mirroring (the mocks share a seed; only the "created" second differs between runs);
//   - the mirror mock saw exactly the requests the hash sample of sample_header (here the
//     client's X-Request-Id, which this test trusts) chooses (so also within 4
//     standard deviations of the binomial), with no credential header and the others kept;
//   - /llmtap/mirror paired exactly those ids, and its counters and the Prometheus counters
//     agree.
func TestMirrorSampleAndPairs(t *testing.T) {
	const n, fraction, seed = 1000, 0.1, 7
	// Pairs are process-wide; a prefix of this run's own keeps -count=N runs apart.
	prefix := ownName("m") + "-"
	off := startUpstream(t, mirrorMock(1))
	p, _ := loadProxy(t, "", mirrorSite(off.addr, ""))
	before := mirrorState(t, p).Counters // process-wide: the tests compare differences
	plain := sendSequential(t, p, prefix, n)

	live := startUpstream(t, mirrorMock(1))
	mock, err := mock.New(mirrorMock(2))
	if err != nil {
		t.Fatal(err)
	}
	headers := &headerLog{next: mock, seen: make(map[string]http.Header)}
	mirrorAddr := testkit.Serve(t, headers)
	p, _ = loadProxy(t, "", mirrorSite(live.addr, fmt.Sprintf("\t\tmirror http://%s {\n\t\t\tsample %v %d\n\t\t\tsample_header X-Request-Id\n\t\t}", mirrorAddr, fraction, seed)))
	mirrored := sendSequential(t, p, prefix, n)
	waitMirrorIdle(t, p)

	coin := sample.New(fraction, seed)
	var want []string
	for i := range n {
		id := prefix + strconv.Itoa(i)
		sent, ok := live.tee.Wait(id, 5*time.Second)
		if !ok || !bytes.Equal(sent, mirrored[id]) {
			t.Fatalf("%s: the client did not get the bytes the live mock wrote with mirroring on", id)
		}
		a, b := createdField.ReplaceAll(plain[id], nil), createdField.ReplaceAll(mirrored[id], nil)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: live response differs with mirroring on:\n%s\n--- off:\n%s", id, b, a)
		}
		if coin.Keep(id) {
			want = append(want, id)
		}
	}

	// What the mirror upstream saw: the arrival log and the ids of its traces.
	var got []string
	for _, tr := range mock.Traces() {
		got = append(got, tr.RequestID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(mock.Arrivals()) != len(want) || !slices.Equal(got, want) {
		t.Fatalf("the mirror mock saw %d arrivals, ids %v; the sample chooses %d: %v", len(mock.Arrivals()), got, len(want), want)
	}
	mean, sd := n*fraction, math.Sqrt(n*fraction*(1-fraction))
	if d := math.Abs(float64(len(got)) - mean); d > 4*sd {
		t.Errorf("mirrored %d of %d at sample %v: %.1f standard deviations from %.0f", len(got), n, fraction, d/sd, mean)
	}
	t.Logf("mirrored %d of %d requests at sample %v (expected %.0f ± %.1f)", len(got), n, fraction, mean, sd)

	for id, h := range headers.all() {
		for _, name := range []string{"Authorization", "X-Api-Key", "Cookie"} {
			if h.Get(name) != "" {
				t.Errorf("%s: the mirror upstream got %s", id, name)
			}
		}
		if h.Get("X-Tenant") != "acme" || mirror.MirrorOf(h.Get(mirror.MarkerHeader)) != id {
			t.Errorf("%s: the mirror upstream got headers %v; want X-Tenant and the marker kept", id, h)
		}
	}

	// The pairs of this run are exactly the mirrored ids, each with both sides measured.
	var pairs []string
	for line := range strings.Lines(string(p.adminGet(t, "/llmtap/mirror/pairs?limit=100000"))) {
		var pr mirror.Pair
		if err := json.Unmarshal([]byte(line), &pr); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(pr.RequestID, prefix) {
			continue // another test's, or another run's
		}
		if pr.Live.TTFTMs == nil || pr.Mirror.TTFTMs == nil || !pr.Live.OK || !pr.Mirror.OK {
			t.Errorf("pair %s: %+v, want both sides successful with a TTFT", pr.RequestID, pr)
		}
		pairs = append(pairs, pr.RequestID)
	}
	slices.Sort(pairs)
	if !slices.Equal(pairs, want) {
		t.Errorf("paired ids %v, want the mirrored ids %v", pairs, want)
	}
	doc := mirrorState(t, p)
	d := doc.Counters
	k := uint64(len(want))
	if d.Sampled-before.Sampled != k || d.Sent-before.Sent != k || d.Completed-before.Completed != k || d.Failed != before.Failed {
		t.Errorf("counters %+v (before %+v): want %d more sampled, sent and completed", d, before, k)
	}
	var ms *mirror.ModelSummary
	for i := range doc.Pairs.Models {
		if doc.Pairs.Models[i].Model == "mirror-model" {
			ms = &doc.Pairs.Models[i]
		}
	}
	if ms == nil || ms.Pairs < len(want) || ms.TTFT.Count < len(want) || ms.ITL.Count < len(want) {
		t.Fatalf("mirror summary %+v: want at least %d pairs of mirror-model with TTFT and ITL", doc.Pairs, len(want))
	}
	t.Logf("live vs mirror TTFT p50 %.3f / %.3f ms, median difference %.3f ms over %d pairs",
		ms.TTFT.Live.P50, ms.TTFT.Mirror.P50, ms.TTFT.DiffP50, ms.TTFT.Count)
	if v := promValue(t, p, "llmtap_mirror_sent_total"); uint64(v) != d.Sent {
		t.Errorf("llmtap_mirror_sent_total %v, summary says %d", v, d.Sent)
	}
}

// TestMirrorFailuresLeaveLiveAlone mirrors every request to a dead port, then to an upstream
// that never answers, and checks that live traffic is unchanged: every response is complete
// and byte-exact; the failed copies count in the canary verdict's error rate. That the live requests did not wait for their copies is shown by order, not
// timing: all live requests completed while the stalled copies were still in flight.
func TestMirrorFailuresLeaveLiveAlone(t *testing.T) {
	const n = 200
	t.Run("dead", func(t *testing.T) {
		dead := testkit.FreeAddr(t) // nothing listens there
		live := startUpstream(t, mirrorMock(3))
		p, _ := loadProxy(t, "", mirrorSite(live.addr, "\t\tmirror http://"+dead+" {\n\t\t\tsample 1\n\t\t}"))
		before := mirrorState(t, p).Counters
		got := sendSequential(t, p, "dead-", n)
		checkLiveBytes(t, live, got)
		waitMirrorIdle(t, p)
		d := mirrorState(t, p).Counters
		if d.Sent-before.Sent != n || d.Failed-before.Failed != n || d.Completed != before.Completed {
			t.Errorf("counters %+v (before %+v): want %d sent and failed", d, before, n)
		}
		// A failed copy is an outcome: it is paired with its live request and the verdict's
		// error rate counts it (the default first look is 200 pairs).
		if vs := mirrorState(t, p).Verdicts; len(vs) != 1 || vs[0].Pairs != n || vs[0].Outcome != mirror.VerdictWorse || vs[0].Diverged != "error_rate" {
			t.Errorf("verdicts %+v: want worse by error_rate over %d pairs", vs, n)
		} else if e := vs[0].Comparisons[len(vs[0].Comparisons)-1]; e.Name != "error_rate" || e.Other != 1 || e.Base != 0 || e.Count != n {
			t.Errorf("error rate %+v: want live 0, mirror 1 over %d pairs", e, n)
		}
		groups, _, _ := p.summary(t)
		if g := groups["mirror-model/live/2xx"]; g.RequestCount.Avg == 0 {
			t.Errorf("no live 2xx group in the summary: %v", groups)
		}
	})
	t.Run("stalling", func(t *testing.T) {
		live := startUpstream(t, mirrorMock(4))
		stalled := testkit.Serve(t, stall)
		p, _ := loadProxy(t, "", mirrorSite(live.addr, "\t\tmirror http://"+stalled+" {\n\t\t\tsample 1\n\t\t\tmax_in_flight 4\n\t\t}"))
		before := mirrorState(t, p).Counters
		got := sendSequential(t, p, "stall-", n)
		// Every live request is complete while the first 4 copies are still held.
		d := mirrorState(t, p).Counters
		if d.InFlight != 4 || d.Sent-before.Sent != 4 || d.Skipped[mirror.SkipOverCap]-before.Skipped[mirror.SkipOverCap] != n-4 {
			t.Errorf("counters %+v (before %+v): want 4 in flight and %d over the cap after all live requests completed", d, before, n-4)
		}
		checkLiveBytes(t, live, got)
		// (p.metricValue waits for the engine to be idle, which the held copies prevent.)
		if v := promValue(t, p, `llmtap_mirror_skipped_total{reason="over_cap"}`); uint64(v) != d.Skipped[mirror.SkipOverCap] {
			t.Errorf("llmtap_mirror_skipped_total{reason=over_cap} %v, summary says %d", v, d.Skipped[mirror.SkipOverCap])
		}
		// Pausing skips sampled requests without sending them.
		llmtap.MirrorGate().Pause("test")
		sendSequential(t, p, "paused-", 10)
		llmtap.MirrorGate().Resume()
		doc := mirrorState(t, p)
		if doc.Counters.Skipped[mirror.SkipPaused]-before.Skipped[mirror.SkipPaused] != 10 || doc.Gate.Paused || doc.Gate.Pauses == 0 {
			t.Errorf("after a pause: counters %+v gate %+v, want 10 skipped as paused, the gate open again", doc.Counters, doc.Gate)
		}
		// Stopping Caddy (the test's cleanup) cancels the held copies; TestMain's goleak
		// check proves their goroutines and connections are gone.
	})
}

// checkLiveBytes checks that each response is what the live mock wrote.
func checkLiveBytes(t *testing.T, live *upstream, got map[string][]byte) {
	t.Helper()
	for id, b := range got {
		sent, ok := live.tee.Wait(id, 5*time.Second)
		if !ok || !bytes.Equal(sent, b) {
			t.Fatalf("%s: the client did not get the bytes the live mock wrote", id)
		}
	}
}

// TestMirrorMaxBodyOverCapture: a mirror max_body larger than the bytes the handler keeps is a
// config error that says what to change, not a mirror that silently skips every large body.
func TestMirrorMaxBodyOverCapture(t *testing.T) {
	cf := ":8080 {\n\tllmtap {\n\t\tmax_request_body 64KiB\n\t\tmirror http://127.0.0.1:9 {\n\t\t\tmax_body 1MiB\n\t\t}\n\t}\n}\n"
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatal(err)
	}
	err = caddy.Validate(&cfg)
	if err == nil || !strings.Contains(err.Error(), "mirror max_body 1048576 is larger than max_request_body 65536") {
		t.Fatalf("validating: %v; want the max_body/max_request_body conflict", err)
	}
}

// TestMirrorWaitsForTheBody: a copy starts only once the live request's body has been read in
// full, so it never competes for it. The client sends half a chunked body, the live upstream
// is already serving the request, and the mirror has received nothing; after the second half
// the mirror gets the whole body. A client that gives up mid-body is not copied
// (body_incomplete), and a chunked body over max_body is not either (body_too_large).
func TestMirrorWaitsForTheBody(t *testing.T) {
	live := startUpstream(t, mirrorMock(5))
	mock, err := mock.New(mirrorMock(6))
	if err != nil {
		t.Fatal(err)
	}
	mirrorAddr := testkit.Serve(t, mock)
	p, _ := loadProxy(t, "", mirrorSite(live.addr, "\t\tmax_request_body 4KiB\n\t\tmirror http://"+mirrorAddr+" {\n\t\t\tsample 1\n\t\t\tmax_body 2KiB\n\t\t}"))
	before := mirrorState(t, p).Counters
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	body := chatBody("mirror-model", 4, true, false)
	half := len(body) / 2

	// send posts a chunked body written by write, and returns the response's status.
	send := func(ctx context.Context, id string, write func(w *io.PipeWriter)) (int, error) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		go write(pw)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	secondHalf := make(chan struct{})
	done := make(chan int, 1)
	go func() {
		status, err := send(context.Background(), "slow-body", func(w *io.PipeWriter) {
			_, _ = w.Write(body[:half])
			<-secondHalf
			_, _ = w.Write(body[half:])
			_ = w.Close()
		})
		if err != nil {
			t.Error(err)
		}
		done <- status
	}()
	waitFor("the live upstream to receive the request", func() bool { return len(live.mock.Arrivals()) == 1 })
	// The live upstream is reading the body; the mirror must not have been started. (A
	// wrong implementation would show here within the pause; a right one never does.)
	time.Sleep(50 * time.Millisecond)
	if n := len(mock.Arrivals()); n != 0 {
		t.Fatalf("the mirror received %d requests while the live body was half sent", n)
	}
	close(secondHalf)
	if status := <-done; status != http.StatusOK {
		t.Fatalf("live status %d", status)
	}
	waitMirrorIdle(t, p)
	tr, ok := mock.TraceByID("slow-body")
	if !ok || len(mock.Arrivals()) != 1 || tr.Status != http.StatusOK {
		t.Fatalf("the mirror did not serve the copy after the body completed (arrivals %d, trace %v)", len(mock.Arrivals()), ok)
	}

	// A client that stops mid-body: the live request fails, no copy is made.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = send(ctx, "abandoned", func(w *io.PipeWriter) {
			_, _ = w.Write(body[:half])
			// (No t.Fatal off the test goroutine: the main check below fails if this times out.)
			for deadline := time.Now().Add(10 * time.Second); len(live.mock.Arrivals()) < 2 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			cancel()
			_ = w.CloseWithError(context.Canceled)
		})
	}()
	<-ctx.Done()
	// A chunked body over max_body (2 KiB) but within the capture (4 KiB): read in full, not copied.
	big := chatBody("mirror-model", 4, true, false)
	big = append(big[:len(big)-1], []byte(`,"user":"`+strings.Repeat("x", 3000)+`"}`)...)
	if status, err := send(context.Background(), "big", func(w *io.PipeWriter) { _, _ = w.Write(big); _ = w.Close() }); err != nil || status != http.StatusOK {
		t.Fatalf("big body: status %d, %v", status, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for mirrorState(t, p).Counters.Skipped[mirror.SkipBodyIncomplete] == before.Skipped[mirror.SkipBodyIncomplete] && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the abandoned request's handler ends asynchronously
	}
	waitMirrorIdle(t, p)
	d := mirrorState(t, p).Counters
	if d.Sent-before.Sent != 1 || d.Skipped[mirror.SkipBodyIncomplete]-before.Skipped[mirror.SkipBodyIncomplete] != 1 ||
		d.Skipped[mirror.SkipBodyTooLarge]-before.Skipped[mirror.SkipBodyTooLarge] != 1 || len(mock.Arrivals()) != 1 {
		t.Errorf("counters %+v (before %+v), mirror arrivals %d: want 1 sent, 1 body_incomplete, 1 body_too_large", d, before, len(mock.Arrivals()))
	}
}
