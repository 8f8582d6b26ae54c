package llmtap_test

// Helpers of the fault matrix (faults_test.go): a scripted upstream that writes exactly the
// bytes of each case (or resets, stalls, streams until canceled, echoes what it received), and
// a runner that sends each case through a site with llmtap and through the same reverse_proxy
// without it, so the client's view can be compared byte for byte.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

// Fault names the upstream understands (the X-Fault request header, which reverse_proxy
// forwards). Any other name is looked up among the scripts registered with script.
const (
	faultReset   = "reset"   // two events, then (when the test opens the gate) a TCP reset
	faultStall   = "stall"   // one event, then silence until the proxy gives up
	faultEndless = "endless" // an event every 5 ms until the request is canceled
	faultBig     = "big"     // bigTotal bytes of events as fast as the proxy takes them
	faultEcho    = "echo"    // reads the request body and reports its size, hash and type
	// faultLockstep writes lockstepEvents content events, each only once the client read the
	// one before (see lockstep), then a finish chunk and [DONE].
	faultLockstep = "lockstep"
)

// script is a response written verbatim: status, headers, then each part flushed on its own.
type script struct {
	status int
	header map[string]string
	parts  [][]byte
}

// body is what the client should receive: every part, in order.
func (s script) body() []byte { return bytes.Join(s.parts, nil) }

// faultUpstream is the scripted upstream.
type faultUpstream struct {
	addr string

	mu       sync.Mutex
	scripts  map[string]script
	gates    map[string]chan struct{}   // per request id, opened by the test
	ended    map[string]chan struct{}   // per request id, closed when an endless stream was canceled
	progress map[string]*atomic.Int64   // per request id, bytes a big stream wrote so far
	bigDone  map[string]chan struct{}   // per request id, closed when a big stream returned
	received map[string]receivedRequest // per request id, what an echo request carried
	steps    map[string]*lockstep       // per request id, a lock-step stream's state
}

// receivedRequest is what the upstream saw of a request body.
type receivedRequest struct {
	n           int64
	sum         string
	contentType string
}

// startFaultUpstream serves the scripted upstream on a loopback port until the test ends. Its
// connections have a small send buffer so back-pressure reaches its writes quickly.
func startFaultUpstream(t *testing.T) *faultUpstream {
	t.Helper()
	u := &faultUpstream{
		scripts:  make(map[string]script),
		gates:    make(map[string]chan struct{}),
		ended:    make(map[string]chan struct{}),
		progress: make(map[string]*atomic.Int64),
		bigDone:  make(map[string]chan struct{}),
		received: make(map[string]receivedRequest),
		steps:    make(map[string]*lockstep),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	base, cancel := context.WithCancel(context.Background())
	hs := &http.Server{
		Handler:           u,
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetWriteBuffer(64 << 10)
			}
			return ctx
		},
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		cancel()
		u.mu.Lock()
		for _, g := range u.gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		u.mu.Unlock()
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fault upstream: %v", err)
		}
	})
	return u
}

// script registers the response of fault name.
func (u *faultUpstream) script(name string, s script) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.scripts[name] = s
}

// gate returns the gate of request id, made on first use.
func (u *faultUpstream) gate(id string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	g, ok := u.gates[id]
	if !ok {
		g = make(chan struct{})
		u.gates[id] = g
	}
	return g
}

// open opens the gate of request id.
func (u *faultUpstream) open(id string) { close(u.gate(id)) }

// endedCh returns the channel closed when the endless stream of request id saw its request
// canceled.
func (u *faultUpstream) endedCh(id string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.ended[id]
	if !ok {
		c = make(chan struct{})
		u.ended[id] = c
	}
	return c
}

// bigState returns the write progress and the completion of the big stream of request id.
func (u *faultUpstream) bigState(id string) (*atomic.Int64, chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.progress[id]
	if !ok {
		p = new(atomic.Int64)
		u.progress[id] = p
		u.bigDone[id] = make(chan struct{})
	}
	return p, u.bigDone[id]
}

// lockstep returns the state of the lock-step stream of request id, made on first use.
func (u *faultUpstream) lockstep(id string) *lockstep {
	u.mu.Lock()
	defer u.mu.Unlock()
	l, ok := u.steps[id]
	if !ok {
		l = &lockstep{acks: make(chan struct{}, 1), done: make(chan struct{})}
		u.steps[id] = l
	}
	return l
}

// lockstepEvents is how many content events a lock-step stream writes.
const lockstepEvents = 16

// lockstep is a stream written one event at a time: content event k+1 is written only after the
// client acknowledged reading event k, and lockstepPace(k) later. So on the way from the
// upstream to the client nothing can hold an event back (the stream would stop), and the time
// anything on the way saw event k lies between writes[k] and the client's read, which is
// before writes[k+1].
type lockstep struct {
	acks    chan struct{} // the client read the last content event
	done    chan struct{} // closed when serve returned; the fields below are final then
	arrived time.Time     // when the upstream began to answer: after the proxy saw the request
	writes  []time.Time   // when the write of each content event began
	stuck   string        // why the stream stopped early, if it did
}

// lockstepPace is the pause between the client's acknowledgement of event k and the write of
// event k+1: 3 to 5 ms, irregular so that no two gaps are alike.
func lockstepPace(k int) time.Duration { return time.Duration(3000+k*7919%2000) * time.Microsecond }

// lockstepEvent is the lock-step stream's content event k.
func lockstepEvent(k int) string { return sseEvent(fmt.Sprintf(" w%d", k)) }

// lockstepBody is the body a lock-step stream writes.
func lockstepBody() []byte {
	var b bytes.Buffer
	for k := range lockstepEvents {
		b.WriteString(lockstepEvent(k))
	}
	b.WriteString(lockstepFinish + sseDone)
	return b.Bytes()
}

const lockstepFinish = `data: {"id":"c","object":"chat.completion.chunk","model":"fault-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"

// serve writes the stream, waiting up to 10 s for each acknowledgement.
func (l *lockstep) serve(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController) {
	defer close(l.done)
	l.arrived = time.Now()
	for k := range lockstepEvents {
		if k > 0 {
			select {
			case <-l.acks:
			case <-ctx.Done():
				l.stuck = fmt.Sprintf("the request ended while the upstream waited for the client to read event %d", k-1)
				return
			case <-time.After(10 * time.Second):
				l.stuck = fmt.Sprintf("the client had not read event %d 10 s after it was written: something on the way held it back", k-1)
				return
			}
			time.Sleep(lockstepPace(k - 1))
		}
		l.writes = append(l.writes, time.Now())
		if _, err := io.WriteString(w, lockstepEvent(k)); err != nil {
			l.stuck = fmt.Sprintf("writing event %d: %v", k, err)
			return
		}
		_ = rc.Flush()
	}
	_, _ = io.WriteString(w, lockstepFinish+sseDone)
}

func (u *faultUpstream) receivedFor(id string) (receivedRequest, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.received[id]
	return r, ok
}

func (u *faultUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	fault := r.Header.Get("X-Fault")
	if fault != faultEcho {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	rc := http.NewResponseController(w)
	sse := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	switch fault {
	case faultReset:
		u.reset(w, id)
	case faultStall:
		sse()
		_, _ = io.WriteString(w, sseEvent("before the stall"))
		_ = rc.Flush()
		select {
		case <-r.Context().Done(): // the proxy gave up and closed the connection
		case <-time.After(10 * time.Second):
		}
	case faultEndless:
		sse()
		ended := u.endedCh(id)
		for i := range 2000 {
			if _, err := io.WriteString(w, sseEvent(fmt.Sprintf(" tok%d", i))); err != nil {
				break
			}
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				close(ended)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	case faultBig:
		progress, done := u.bigState(id)
		defer close(done)
		sse()
		for ev := range bigEvents() {
			n, err := w.Write(ev)
			progress.Add(int64(n))
			if err != nil {
				return
			}
			_ = rc.Flush()
		}
	case faultEcho:
		u.echo(w, r, id)
	case faultLockstep:
		sse()
		u.lockstep(id).serve(r.Context(), w, rc)
	default:
		u.mu.Lock()
		s, ok := u.scripts[fault]
		u.mu.Unlock()
		if !ok {
			http.Error(w, "unknown fault "+fault, http.StatusTeapot)
			return
		}
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.status)
		for _, p := range s.parts {
			_, _ = w.Write(p)
			_ = rc.Flush()
		}
	}
}

// resetEvents are what the reset fault writes before it resets the connection.
var resetEvents = sseEvent("one") + sseEvent("two")

// reset writes a chunked SSE response with two events on the raw connection, waits for the
// test to open the gate (the client has them, so nothing is in flight), then closes the
// connection with SO_LINGER 0: a TCP reset, as a crashing server or a middlebox sends.
func (u *faultUpstream) reset(w http.ResponseWriter, id string) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	body := strconv.FormatInt(int64(len(resetEvents)), 16) + "\r\n" + resetEvents + "\r\n"
	_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
	_ = brw.Flush()
	<-u.gate(id)
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// echo answers a chat completion whose content reports the request body's size, SHA-256 and
// content type, and records them; an empty body gets a 400 with an OpenAI error object.
func (u *faultUpstream) echo(w http.ResponseWriter, r *http.Request, id string) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	got := receivedRequest{n: n, sum: hex.EncodeToString(h.Sum(nil)), contentType: r.Header.Get("Content-Type")}
	u.mu.Lock()
	u.received[id] = got
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n == 0 {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"empty request body","type":"invalid_request_error"}}`)
		return
	}
	fmt.Fprintf(w, `{"id":"echo","object":"chat.completion","model":"fault-model","choices":[{"index":0,"message":{"role":"assistant","content":"bytes=%d sha256=%s type=%s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		got.n, got.sum, strings.ReplaceAll(got.contentType, `"`, ""))
}

// sseEvent is one OpenAI chat chunk carrying content, as an SSE event.
func sseEvent(content string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","model":"fault-model","choices":[{"index":0,"delta":{"content":"` +
		content + `"},"finish_reason":null}]}` + "\n\n"
}

const sseDone = "data: [DONE]\n\n"

// Size of the big stream: bigEventCount events of about 16 KiB, then [DONE]; 20 MiB in all.
const (
	bigEventContent = 16<<10 - 128
	bigEventCount   = 20 << 20 / (16 << 10)
)

// bigEvents yields the events of the big stream (the same bytes on every call).
func bigEvents() func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		// Words, as a model writes them: the tokenizer's work on the record stays small.
		ev := []byte(sseEvent(strings.Repeat(" word", bigEventContent/5)))
		for range bigEventCount {
			if !yield(ev) {
				return
			}
		}
		yield([]byte(sseDone))
	}
}

// bigStream returns the size and SHA-256 of the big stream.
func bigStream() (int64, string) {
	h := sha256.New()
	var n int64
	for ev := range bigEvents() {
		h.Write(ev)
		n += int64(len(ev))
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// outcome is what a client saw of one exchange.
type outcome struct {
	status  int
	body    []byte
	err     error         // from sending or reading the body; nil when it completed
	elapsed time.Duration // from sending until the body completed or failed
}

// sameAs reports how o differs from the plain proxy's outcome, or "" when the client could not
// tell them apart: the same status, the same bytes, both complete or both cut.
func (o outcome) sameAs(plain outcome) string {
	var diffs []string
	if o.status != plain.status {
		diffs = append(diffs, fmt.Sprintf("status %d, plain proxy %d", o.status, plain.status))
	}
	if !bytes.Equal(o.body, plain.body) {
		diffs = append(diffs, fmt.Sprintf("%d body bytes differ from the plain proxy's %d", len(o.body), len(plain.body)))
	}
	if (o.err == nil) != (plain.err == nil) {
		diffs = append(diffs, fmt.Sprintf("ended with %v, plain proxy with %v", o.err, plain.err))
	}
	return strings.Join(diffs, "; ")
}

// exchange sends a request for fault with request id id and reads the response in full.
func exchange(ctx context.Context, c *http.Client, url, id, fault string, body io.Reader, size int64, contentType string, header map[string]string) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return outcome{err: err}
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("X-Request-Id", id)
	req.Header.Set("X-Fault", fault)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return outcome{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return outcome{status: resp.StatusCode, body: b, err: err, elapsed: time.Since(start)}
}

// readUntil reads r until what was read contains want n times, or fails the test.
func readUntil(t *testing.T, r io.Reader, want string, n int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 4096)
	for strings.Count(string(got), want) < n {
		k, err := r.Read(buf)
		got = append(got, buf[:k]...)
		if err != nil {
			t.Fatalf("the stream ended after %d bytes, before %d × %q: %v", len(got), n, want, err)
		}
	}
	return got
}

// waitClosed waits (bounded) for c to be closed.
func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen within 5 s", what)
	}
}

// genReader yields n deterministic bytes without holding them: a JSON chat request whose
// prompt is padded with filler, so its start parses as a request.
type genReader struct {
	n, off int64
}

var genPrefix = []byte(`{"model":"fault-model","stream":false,"messages":[{"role":"user","content":"`)

// genFiller is the filler pattern, long enough to copy a read's worth from any phase.
var genFiller = func() []byte {
	b := make([]byte, 64<<10+26)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}()

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.off, 64<<10)]
	n := 0
	if g.off < int64(len(genPrefix)) {
		n = copy(p, genPrefix[g.off:])
	}
	for n < len(p) {
		at := g.off + int64(n)
		n += copy(p[n:], genFiller[at%26:])
	}
	g.off += int64(n)
	return n, nil
}

// encodedParts compresses events in coding ("gzip" or "br"), flushing after each as a
// streaming server does, and returns one part per event (the last one closes the stream).
func encodedParts(t *testing.T, coding string, events []string) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		io.WriteCloser
		Flush() error
	}
	if coding == "gzip" {
		w = gzip.NewWriter(&buf)
	} else {
		w = brotli.NewWriter(&buf)
	}
	var parts [][]byte
	for i, ev := range events {
		_, _ = io.WriteString(w, ev)
		_ = w.Flush()
		if i == len(events)-1 {
			_ = w.Close()
		}
		parts = append(parts, bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	return parts
}

// hashSum is a SHA-256 that reports in hex.
type hashSum struct{ hash.Hash }

func newSum() hashSum         { return hashSum{sha256.New()} }
func (h hashSum) hex() string { return hex.EncodeToString(h.Sum(nil)) }
