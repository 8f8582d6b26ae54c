package mirror

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seen is what an upstream saw of each request: its headers by X-Request-Id.
type seen struct {
	mu      sync.Mutex
	headers map[string]http.Header
	paths   map[string]string
}

// serve starts h on a loopback port, records the headers of every request on the way, and
// stops it (closing every connection) when the test ends.
func serve(t *testing.T, h http.Handler) (string, *seen) {
	t.Helper()
	s := &seen{headers: make(map[string]http.Header), paths: make(map[string]string)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers[r.Header.Get("X-Request-Id")] = r.Header.Clone()
		s.paths[r.Header.Get("X-Request-Id")] = r.URL.RequestURI()
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
	base, cancel := context.WithCancel(context.Background())
	hs.BaseContext = func(net.Listener) context.Context { return base }
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { cancel(); _ = hs.Close(); <-done })
	return "http://" + ln.Addr().String(), s
}

func (s *seen) get(id string) (http.Header, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[id], s.paths[id]
}

func newMock(t *testing.T) *mock.Server {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.OutputTokens = 2*time.Millisecond, time.Millisecond, 8
	m, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stall is an upstream that never answers until the request is canceled. It reads the body
// first: only then does the server watch the connection and cancel the request's context when
// the client goes away.
var stall = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
})

const chat = `{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`

func liveRequest(id, body string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://proxy.example/v1/chat/completions?x=1", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer live-secret")
	r.Header.Set("X-Api-Key", "live-key")
	r.Header.Set("Cookie", "session=1")
	r.Header.Set("Connection", "keep-alive, X-Hop")
	r.Header.Set("X-Hop", "per-connection")
	r.Header.Set("X-Custom", "kept")
	r.Header.Set("X-Request-Id", "client-"+id)
	return r
}

func newMirror(t *testing.T, o Options) (*Mirror, *tap.Tap) {
	t.Helper()
	tp := tap.New(tap.Options{})
	t.Cleanup(func() { _ = tp.Close(context.Background()) })
	if o.Sample == 0 {
		o.Sample = 1
	}
	o.Measure = tp
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m, tp
}

// idle waits (bounded) until m has no copy in flight.
func idle(t *testing.T, m *Mirror) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Snapshot().InFlight > 0 {
		if time.Now().After(deadline) {
			t.Fatal("copies still in flight after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func recordOf(t *testing.T, tp *tap.Tap, id string) record.Record {
	t.Helper()
	tp.Flush()
	for _, r := range tp.Recent().Last(1000) {
		if r.RequestID == id {
			return *r
		}
	}
	t.Fatalf("no record of %s", id)
	return record.Record{}
}

// TestCopyIsMeasuredAsMirror sends one copy to the mock and checks what the upstream saw (the
// path, the body's model, the headers without credentials or hop-by-hop ones) and what the
// engine measured of it.
func TestCopyIsMeasuredAsMirror(t *testing.T) {
	url, saw := serve(t, http.StripPrefix("/base", newMock(t)))
	pairs := NewPairer(0, 0)
	m, tp := newMirror(t, Options{Upstream: url + "/base/", Pairs: pairs})
	q := m.Offer(liveRequest("1", chat), "req-1")
	if q == nil {
		t.Fatal("sample 1 did not offer the request")
	}
	q.Send([]byte(chat), false)
	q.Send([]byte(chat), false) // a second call does nothing
	idle(t, m)

	h, path := saw.get("req-1")
	if h == nil {
		t.Fatal("the mirror upstream saw no request with X-Request-Id req-1 (the live id)")
	}
	if path != "/base/v1/chat/completions?x=1" {
		t.Errorf("path %q, want the prefix, the live path and query", path)
	}
	for _, name := range []string{"Authorization", "X-Api-Key", "Cookie", "X-Hop", "Connection"} {
		if v := h.Get(name); v != "" {
			t.Errorf("%s forwarded (%q); credentials and hop-by-hop headers must not be", name, v)
		}
	}
	if h.Get("X-Custom") != "kept" || h.Get("Content-Type") != "application/json" || MirrorOf(h.Get(MarkerHeader)) != "req-1" || !processSecret().verify(h.Get(MarkerHeader)) {
		t.Errorf("headers %v: want X-Custom, Content-Type and the marker", h)
	}
	r := recordOf(t, tp, "req-1")
	if r.Class != record.ClassMirror || r.Error != "" || r.TTFTMs == nil || r.OutputTokens != 8 || r.Model != "m" {
		t.Errorf("record %+v: want class mirror, no error, a TTFT, 8 output tokens, model m", r)
	}
	c := m.Stats().Snapshot()
	if c.Sampled != 1 || c.Sent != 1 || c.Completed != 1 || c.Failed != 0 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if s := pairs.Summary(); s.Pending != 1 {
		t.Errorf("pending %d: the copy must be expected until its live record arrives", s.Pending)
	}
}

// TestHeaderUpAndForwardSensitive: credentials are forwarded only when named, header_up sets
// and removes headers.
func TestHeaderUpAndForwardSensitive(t *testing.T) {
	url, saw := serve(t, newMock(t))
	m, _ := newMirror(t, Options{Upstream: url, ForwardSensitive: []string{"authorization"},
		HeaderUp: map[string]string{"X-Api-Key": "mirror-key", "X-Custom": ""}})
	m.Offer(liveRequest("2", chat), "req-2").Send([]byte(chat), false)
	idle(t, m)
	h, _ := saw.get("req-2")
	if h.Get("Authorization") != "Bearer live-secret" || h.Get("X-Api-Key") != "mirror-key" || h.Get("X-Custom") != "" || h.Get("Cookie") != "" {
		t.Errorf("headers %v: want the live Authorization, X-Api-Key from header_up, no X-Custom, no Cookie", h)
	}
}

// TestQueryCredentialsStripped: credential query parameters never reach the mirror upstream,
// every other parameter does, in order and as encoded.
func TestQueryCredentialsStripped(t *testing.T) {
	url, saw := serve(t, newMock(t))
	m, _ := newMirror(t, Options{Upstream: url})
	r := liveRequest("3", chat)
	r.URL.RawQuery = "api-version=2024-06-01&api_key=sk-q1&key=g-q2&Token=t-q3&subscription-key=s-q4&X-Amz-Signature=a-q5&sig=z-q6&x=%2F"
	m.Offer(r, "req-3").Send([]byte(chat), false)
	idle(t, m)
	_, uri := saw.get("req-3")
	if want := "/v1/chat/completions?api-version=2024-06-01&x=%2F"; uri != want {
		t.Errorf("the mirror upstream saw %s, want %s", uri, want)
	}
}

// TestSkips checks every reason a sampled request is not sent, and that it is counted.
func TestSkips(t *testing.T) {
	url, _ := serve(t, stall)
	gate := new(Gate)
	m, tp := newMirror(t, Options{Upstream: url, MaxBody: 100, MaxInFlight: 2, Gate: gate})
	big := strings.Repeat("x", 101)

	declared := liveRequest("a", big) // Content-Length over max_body: refused before the body
	if m.Offer(declared, "a") != nil {
		t.Error("a request declaring a body over max_body was offered")
	}
	loop := liveRequest("b", chat)
	loop.Header.Set(MarkerHeader, processSecret().sign("x")) // a copy of this process's
	if m.Offer(loop, "b") != nil {
		t.Error("a mirror copy was offered for mirroring again")
	}
	for _, forged := range []string{"x", "x;sig=", "x;sig=AAAAAAAAAAAAAAAAAAAAAA", processSecret().sign("x") + "y"} {
		r := liveRequest("b2", chat)
		r.Header.Set(MarkerHeader, forged) // a client's: it does not opt its request out
		q := m.Offer(r, "b2")
		if q == nil {
			t.Fatalf("a live request carrying %s %q was not offered for mirroring", MarkerHeader, forged)
		}
		q.Abandon()
	}
	chunked := liveRequest("c", "")
	chunked.ContentLength = -1
	m.Offer(chunked, "c").Send([]byte(big), false) // larger than declared
	m.Offer(liveRequest("d", chat), "d").Send([]byte(chat), true)
	m.Offer(liveRequest("e", chat), "e").Abandon()
	gate.Pause("test")
	m.Offer(liveRequest("f", chat), "f").Send([]byte(chat), false)
	gate.Resume()
	for _, id := range []string{"g", "h", "i"} { // the stalling upstream holds two; the third is over the cap
		m.Offer(liveRequest(id, chat), id).Send([]byte(chat), false)
	}
	q := m.Offer(liveRequest("j", chat), "j")
	_ = m.Close(context.Background()) // cancels g and h
	q.Send([]byte(chat), false)

	c := m.Stats().Snapshot()
	want := map[string]uint64{SkipBodyTooLarge: 3, SkipLoop: 1, SkipBodyIncomplete: 5, SkipPaused: 1, SkipOverCap: 1, SkipStopped: 1}
	for reason, n := range want {
		if c.Skipped[reason] != n {
			t.Errorf("skipped %s = %d, want %d", reason, c.Skipped[reason], n)
		}
	}
	if c.Sampled != 14 || c.Sent != 2 || c.Cut != 2 || c.Failed != 0 || c.Completed != 0 || c.InFlight != 0 {
		t.Errorf("counters %+v: want 14 sampled, 2 sent and both cut (stopped by Close), none failed", c)
	}
	r := recordOf(t, tp, "g")
	if r.Error != record.ErrCanceled || r.ErrorMsg != CutMessage {
		t.Errorf("a copy canceled by Close: error %q %q, want client_canceled, %q", r.Error, r.ErrorMsg, CutMessage)
	}
}

// TestFailures: a refused connection and a timeout are failed copies with records that say so.
func TestFailures(t *testing.T) {
	dead, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	m, tp := newMirror(t, Options{Upstream: "http://" + dead})
	m.Offer(liveRequest("1", chat), "dead").Send([]byte(chat), false)
	url, _ := serve(t, stall)
	m2, tp2 := newMirror(t, Options{Upstream: url, Timeout: 50 * time.Millisecond})
	m2.Offer(liveRequest("2", chat), "slow").Send([]byte(chat), false)
	// The timeout fires on its own (not Close).
	idle(t, m)
	idle(t, m2)
	for _, c := range []Counters{m.Stats().Snapshot(), m2.Stats().Snapshot()} {
		if c.Failed != 1 || c.Completed != 0 {
			t.Errorf("counters %+v: want one failed copy", c)
		}
	}
	if r := recordOf(t, tp, "dead"); r.Error != record.ErrUpstream || !strings.Contains(r.ErrorMsg, "refused") {
		t.Errorf("dead upstream: %q %q", r.Error, r.ErrorMsg)
	}
	if r := recordOf(t, tp2, "slow"); r.Error != record.ErrUpstream || !strings.Contains(r.ErrorMsg, "timeout of 50ms") {
		t.Errorf("stalling upstream: %q %q", r.Error, r.ErrorMsg)
	}
}

// TestHTTPErrorIsFailed: a copy answered with a 4xx/5xx status is failed.
func TestHTTPErrorIsFailed(t *testing.T) {
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusServiceUnavailable)
	}))
	m, tp := newMirror(t, Options{Upstream: url})
	m.Offer(liveRequest("1", chat), "503").Send([]byte(chat), false)
	idle(t, m)
	if c := m.Stats().Snapshot(); c.Failed != 1 {
		t.Errorf("counters %+v: want one failed copy", c)
	}
	if r := recordOf(t, tp, "503"); r.Status != 503 || r.Error != record.ErrHTTP {
		t.Errorf("record status %d error %q", r.Status, r.Error)
	}
}

// TestOfferFollowsTheSample: with sample_header set, the sample is a hash of that header (Offer
// agrees with Sampled); without it, each request is a draw of its own whatever its ids, so a
// client reusing one X-Request-Id (here for every request) neither forces nor avoids the copy
// (issue 35: 200/200 or 0/200 before).
func TestOfferFollowsTheSample(t *testing.T) {
	t.Parallel()
	keyed, _ := newMirror(t, Options{Upstream: "http://127.0.0.1:9", Sample: 0.3, Seed: 5, SampleHeader: "x-trace-id"})
	own, _ := newMirror(t, Options{Upstream: "http://127.0.0.1:9", Sample: 0.3, Seed: 5})
	offered := map[*Mirror]int{}
	for i := range 1000 {
		id := "id-" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		for _, m := range []*Mirror{keyed, own} {
			r, _ := http.NewRequest(http.MethodGet, "http://x/v1/models", nil)
			r.Header.Set("X-Trace-Id", id)
			r.Header.Set("X-Request-Id", "reused")
			q := m.Offer(r, "reused")
			if m == keyed && (q != nil) != m.Sampled(id) {
				t.Fatalf("Offer and Sampled disagree on %s", id)
			}
			if q != nil {
				offered[m]++
				q.Abandon()
			}
		}
	}
	// 4 standard deviations of Binomial(1000, 0.3) is 58: a fair draw falls outside with
	// probability < 1e-4; a reused id decides all or nothing (0 or 1000).
	for m, name := range map[*Mirror]string{keyed: "sample_header", own: "own key"} {
		if n := offered[m]; n < 300-58 || n > 300+58 {
			t.Errorf("%s: offered %d of 1000 at sample 0.3", name, n)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no upstream", Options{}, "upstream is required"},
		{"bad scheme", Options{Upstream: "ftp://x"}, "scheme must be http or https"},
		{"query", Options{Upstream: "http://x/?a=1"}, "only scheme, host, port and a path prefix"},
		{"sample over 1", Options{Upstream: "x:1", Sample: 1.5}, "sample must be a fraction"},
		{"negative body", Options{Upstream: "x:1", MaxBody: -1}, "max_body must not be negative"},
		{"negative cap", Options{Upstream: "x:1", MaxInFlight: -1}, "max_in_flight must not be negative"},
		{"negative timeout", Options{Upstream: "x:1", Timeout: -1}, "timeout must not be negative"},
		{"hop-by-hop header_up", Options{Upstream: "x:1", HeaderUp: map[string]string{"connection": "x"}}, "hop-by-hop"},
		{"bad header name", Options{Upstream: "x:1", HeaderUp: map[string]string{"a b": "x"}}, "not a header name"},
		{"forwarding a plain header", Options{Upstream: "x:1", ForwardSensitive: []string{"X-Custom"}}, "not a credential header"},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	if err := (Options{Upstream: "127.0.0.1:8000"}).Validate(); err != nil {
		t.Errorf("a bare host:port is valid: %v", err)
	}
	if _, err := New(Options{Upstream: "x:1"}); err == nil {
		t.Error("New without a Measurer must fail")
	}
}

// TestSendNeverBlocks: Send returns at once even when the upstream stalls and the cap is full,
// which is what keeps the live request unaffected. It is checked by counters, not timing: all
// Sends return while the upstream holds every copy.
func TestSendNeverBlocks(t *testing.T) {
	url, _ := serve(t, stall)
	m, _ := newMirror(t, Options{Upstream: url, MaxInFlight: 4})
	for i := range 100 {
		id := "n" + strings.Repeat("x", i)
		m.Offer(liveRequest(id, chat), id).Send([]byte(chat), false)
	}
	c := m.Stats().Snapshot()
	if c.Sent != 4 || c.Skipped[SkipOverCap] != 96 {
		t.Errorf("counters %+v: want 4 sent, 96 over the cap, all while the upstream held the first 4", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = m.Close(context.Background()); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close did not stop the copies held by a stalling upstream")
	}
}

// TestReloadsCutCopiesAreNotPaired: a config reload or shutdown closes the Mirror with copies
// in flight. Those copies are cut by llmtap, not failed by the upstream: counted as cut, never
// failed, and never paired, so an identical mirror's error rate cannot turn worse from reloads (issue 35: 547 of 635 copies cut by 200 reloads became mirror errors and
// the verdict worse). 60 reloads, each closing the mirror 0–20 ms after its 10 copies start
// (a response takes ~10 ms), so some copies complete and most are cut.
func TestReloadsCutCopiesAreNotPaired(t *testing.T) {
	t.Parallel()
	url, _ := serve(t, newMock(t))
	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	stats, pairs := new(Stats), NewPairer(0, 0)
	tp.AddSink(pairs)
	rng := rand.New(rand.NewPCG(35, 1))
	const reloads, copies = 60, 10
	for i := range reloads {
		m, err := New(Options{Upstream: url, Sample: 1, Measure: tp, Stats: stats, Pairs: pairs})
		if err != nil {
			t.Fatal(err)
		}
		for j := range copies {
			id := fmt.Sprintf("r%d-%d", i, j)
			m.Offer(liveRequest(id, chat), id).Send([]byte(chat), false)
			pairs.Consume(rec(id, record.ClassLive, "m", 2, 1, 10, "")) // the live side succeeded
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		_ = m.Close(context.Background()) // the reload
	}
	tp.Flush()
	c := stats.Snapshot()
	if c.Sent != reloads*copies || c.Failed != 0 || c.Cut == 0 || c.Completed+c.Cut != c.Sent {
		t.Fatalf("counters %+v: want %d sent, each completed or cut, some cut, none failed", c, reloads*copies)
	}
	s := pairs.Summary()
	if s.Pairs != c.Completed || s.Pending != 0 || s.Unpaired != 0 {
		t.Errorf("pairer %d pairs, %d pending, %d unpaired: want one pair per completed copy (%d), the cut ones (%d) forgotten",
			s.Pairs, s.Pending, s.Unpaired, c.Completed, c.Cut)
	}
	for _, pr := range pairs.Pairs() {
		if !pr.Mirror.OK {
			t.Fatalf("pair %s has a failed mirror side: a cut copy was paired", pr.RequestID)
		}
	}
	t.Logf("%d reloads: %d copies sent, %d completed and paired, %d cut", reloads, c.Sent, c.Completed, c.Cut)
}
