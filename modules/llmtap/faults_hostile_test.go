package llmtap_test

// Hostile cases of the fault matrix (issue 19): a decompression bomb, inject_usage in front of a
// compressing upstream and an upstream cut mid-event, and WebSocket upgrades. Like the rest of
// the matrix, each case goes through a site with llmtap and through the same reverse_proxy
// without it; nothing here asserts on wall-clock time: a held stream is caught by an upstream
// that writes its next event only once the client read the one before.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/coder/websocket"

	"github.com/llmtap/llmtap/internal/bomb"
	"github.com/llmtap/llmtap/telemetry/record"
)

// hostileRig is the fault rig over three upstreams, each behind a pair of sites (with llmtap,
// then the same reverse_proxy alone): sites[0:2] the scripted upstream with inject_usage,
// sites[2:4] the scripted upstream, sites[4:6] the lock-step upstream with inject_usage,
// sites[6:8] the WebSocket echo.
type hostileRig struct {
	faultRig
	step *stepUpstream
}

func TestFaultsHostile(t *testing.T) {
	up := startFaultUpstream(t)
	step := &stepUpstream{acks: make(map[string]chan struct{}), stuck: make(map[string]string)}
	stepAddr := serveLoopback(t, step)
	wsAddr := serveLoopback(t, http.HandlerFunc(wsEcho))
	inject := "\tllmtap {\n\t\tinject_usage\n\t}\n"
	p, _ := loadProxy(t, "",
		site{body: inject + "\treverse_proxy " + up.addr},
		site{body: "\treverse_proxy " + up.addr},
		site{body: "\tllmtap\n\treverse_proxy " + up.addr},
		site{body: "\treverse_proxy " + up.addr},
		site{body: inject + "\treverse_proxy " + stepAddr},
		site{body: "\treverse_proxy " + stepAddr},
		site{body: "\tllmtap\n\treverse_proxy " + wsAddr},
		site{body: "\treverse_proxy " + wsAddr},
	)
	f := &hostileRig{faultRig: faultRig{up: up, p: p, client: newClient(t)}, step: step}
	t.Run("decompression bomb and bounded decoding", f.testDecodeBounds)
	t.Run("inject_usage with a compressing upstream", f.testInjectCompressed)
	t.Run("inject_usage and an upstream cut mid-event", f.testInjectCut)
	t.Run("WebSocket upgrade", f.testWebSocket)
}

// testDecodeBounds: the meter decodes an encoded body in the write path, so what it decodes is
// bounded by ratio and by size. Each case is checked by the bytes the meter decoded (the
// record's decoded_bytes) and the bytes the client received (those of the plain proxy), not
// by time.
func (f *hostileRig) testDecodeBounds(t *testing.T) {
	gz := bomb.Gzip(256) // 256 KiB that decode to 256 MiB: deflate's maximum ratio
	stream, streamGz := repetitiveChat(t, 20000)
	if ratio := len(stream) / len(streamGz); ratio < 200 {
		t.Fatalf("the repetitive stream compresses %d:1; the test needs at least 200:1", ratio)
	}
	_, bodyGz := repetitiveChat(t, 40000) // 5.8 MB: past the 4 MiB kept of a complete body
	tests := []struct {
		name, reason, contentType string
		encoded                   []byte
		stopped                   string
		minDecoded, maxDecoded    int64
		contentEvents             int
		errClass                  string
	}{
		{"gzip_bomb", "a bomb stops decoding by ratio within a few MiB, and is malformed",
			"text/event-stream", gz, "ratio", 1 << 20, 4 << 20, 0, record.ErrMalformed},
		{"gzip_200_to_1", "a real stream compressed 200:1 or more is measured in full",
			"text/event-stream", streamGz, "", int64(len(stream)), int64(len(stream)), 20000, ""},
		{"gzip_big_body", "a complete body is decoded only as far as the meter keeps it (4 MiB)",
			"application/json", bodyGz, "size", 4<<20 + 1, 4<<20 + 1, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "bound_" + tc.name
			f.up.script(name, script{200, map[string]string{"Content-Type": tc.contentType, "Content-Encoding": "gzip"}, chunks(tc.encoded, 64<<10)})
			body := chatBody("fault-model", 8, true, false)
			out, rec := f.pair(t, 2, name, func(url, id string) outcome {
				return exchange(t.Context(), f.client, url, id, name, bytes.NewReader(body), int64(len(body)), "application/json",
					map[string]string{"Accept-Encoding": "gzip"})
			})
			if out.err != nil || !bytes.Equal(out.body, tc.encoded) || rec.Bytes != int64(len(tc.encoded)) {
				t.Errorf("%s: the client got %d bytes (%v), %d recorded; the upstream sent %d", tc.reason, len(out.body), out.err, rec.Bytes, len(tc.encoded))
			}
			if rec.DecodeStopped != tc.stopped || rec.DecodedBytes < tc.minDecoded || rec.DecodedBytes > tc.maxDecoded {
				t.Errorf("%s: decode_stopped %q after %d decoded bytes; want %q after %d to %d",
					tc.reason, rec.DecodeStopped, rec.DecodedBytes, tc.stopped, tc.minDecoded, tc.maxDecoded)
			}
			if rec.ContentEvents != tc.contentEvents || rec.Error != tc.errClass {
				t.Errorf("%s: %d content events, error %q (%s); want %d, %q", tc.reason, rec.ContentEvents, rec.Error, rec.ErrorMsg, tc.contentEvents, tc.errClass)
			}
			if tc.stopped != "" {
				if n := f.p.metricValue(t, "llmtap_decode_stopped_total", map[string]string{"reason": tc.stopped}); n < 1 {
					t.Errorf("%s: llmtap_decode_stopped_total{reason=%q} is %v, want at least 1", tc.reason, tc.stopped, n)
				}
			}
		})
	}
}

// testInjectCompressed: with inject_usage, a request is rewritten before the response and its
// coding exist. The lock-step upstream compresses when asked (or always, for a server that
// ignores Accept-Encoding) and sends the usage chunk only when asked for it; it writes each
// event only once the client read the one before, so a stream held anywhere stops it.
func (f *hostileRig) testInjectCompressed(t *testing.T) {
	tests := []struct {
		name, reason, fault, accept, usage string
		sameBytes                          bool // byte for byte the plain proxy's (else the same decoded content)
	}{
		{"gzip_accepted", "a client that accepts gzip and identity is served identity, filtered, never held",
			stepGzipIfAccepted, "gzip, deflate, br", record.UsageInjectedIdentity, false},
		{"identity_refused", "a client that accepts only compressed responses is not injected: byte for byte the plain proxy's",
			stepGzipIfAccepted, "gzip, identity;q=0", record.UsageSkippedCompressed, true},
		{"br_regardless", "a server that compresses although asked for identity is passed unfiltered, never held",
			stepBrAlways, "", record.UsageUnfilteredEncoded, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "inject_" + tc.name
			got := make(map[string][]byte)
			for i, id := range []string{name + "-tap", name + "-plain"} {
				raw, content := f.stepExchange(t, f.p.sites[4+i]+"/v1/chat/completions", id, tc.fault, tc.accept)
				if why := f.step.stuckOf(id); why != "" {
					t.Fatalf("%s: %s: %s", tc.reason, id, why)
				}
				got[id+" raw"], got[id] = raw, content
			}
			if tc.sameBytes && !bytes.Equal(got[name+"-tap raw"], got[name+"-plain raw"]) {
				t.Errorf("%s: the client got %d bytes, through the plain proxy %d", tc.reason, len(got[name+"-tap raw"]), len(got[name+"-plain raw"]))
			}
			wantContent := stepContent(false)
			if tc.usage == record.UsageUnfilteredEncoded {
				wantContent = stepContent(true) // the documented limit: the usage chunk passes
			}
			if !bytes.Equal(got[name+"-tap"], wantContent) || !bytes.Equal(got[name+"-plain"], stepContent(false)) {
				t.Errorf("%s: decoded, the client got\n%s\nthe plain proxy's client\n%s", tc.reason, got[name+"-tap"], got[name+"-plain"])
			}
			rec, ok := f.p.records(t)[name+"-tap"]
			if !ok {
				t.Fatalf("no record of %s-tap", name)
			}
			wantSource := record.SourceUsage
			if tc.usage == record.UsageSkippedCompressed {
				wantSource = record.SourceTokenizer
			}
			if rec.UsageInjection != tc.usage || rec.Error != "" || rec.OutputTokensSource != wantSource {
				t.Errorf("%s: usage_injection %q, error %q (%s), output tokens from %q; want %q, none, %q",
					tc.reason, rec.UsageInjection, rec.Error, rec.ErrorMsg, rec.OutputTokensSource, tc.usage, wantSource)
			}
			if n := f.p.metricValue(t, "llmtap_usage_injection_total", map[string]string{"outcome": tc.usage}); n < 1 {
				t.Errorf("%s: llmtap_usage_injection_total{outcome=%q} is %v, want at least 1", tc.reason, tc.usage, n)
			}
		})
	}
}

// stepExchange sends a streaming chat request without include_usage and reads the response
// in lock step: event k, then the acknowledgement that lets the upstream write event k+1. It
// returns the bytes received and their decoding.
func (f *hostileRig) stepExchange(t *testing.T, url, id, fault, accept string) (raw, content []byte) {
	t.Helper()
	body := chatBody("fault-model", 8, true, false)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	req.Header.Set("X-Fault", fault)
	if accept != "" {
		req.Header.Set("Accept-Encoding", accept)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var wire bytes.Buffer
	var dec io.Reader = io.TeeReader(resp.Body, &wire)
	switch resp.Header.Get("Content-Encoding") {
	case "gzip":
		zr, err := gzip.NewReader(dec)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		dec = zr
	case "br":
		dec = brotli.NewReader(dec)
	}
	br := bufio.NewReader(dec)
	var got bytes.Buffer
	for k := range stepEvents {
		for strings.Count(got.String(), "\n\n") < k+1 {
			line, err := br.ReadBytes('\n')
			got.Write(line)
			if err != nil {
				t.Fatalf("%s: the stream ended after %d decoded bytes, before event %d: %v", id, got.Len(), k, err)
			}
		}
		f.step.ack(id)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	got.Write(rest)
	return wire.Bytes(), got.Bytes()
}

// testInjectCut: the upstream closes its connection inside an event (its Content-Length
// promised more). The client of llmtap with inject_usage must get every byte the plain
// proxy's client gets, the partial event the filter held included, and see the same cut.
func (f *hostileRig) testInjectCut(t *testing.T) {
	partial := `data: {"id":"c","object":"chat.completion.chunk","model":"fault-model","choices":[{"index":0,"delta":{"content":"cu`
	s := script{200, map[string]string{"Content-Type": "text/event-stream", "Content-Length": "100000"},
		[][]byte{[]byte(sseEvent("a")), []byte(sseEvent("b")), []byte(partial)}}
	f.up.script("inject_cut", s)
	body := chatBody("fault-model", 8, true, false)
	out, rec := f.pair(t, 0, "inject_cut", func(url, id string) outcome {
		return exchange(t.Context(), f.client, url, id, "inject_cut", bytes.NewReader(body), int64(len(body)), "application/json", nil)
	})
	if out.err == nil || !bytes.Equal(out.body, s.body()) {
		t.Errorf("the client got %d bytes (%v); the upstream sent %d and cut the stream", len(out.body), out.err, len(s.body()))
	}
	if rec.UsageInjection != record.UsageInjected || rec.Error != record.ErrUpstream || rec.ContentEvents != 2 {
		t.Errorf("usage_injection %q, error %q, %d content events; want %q, %q, 2", rec.UsageInjection, rec.Error, rec.ContentEvents, record.UsageInjected, record.ErrUpstream)
	}
}

// testWebSocket: a WebSocket through reverse_proxy is a hijacked connection. Its record says
// what it was: status 101, the bytes each way, no error; the client exchanges the same
// messages as through the plain proxy.
func (f *hostileRig) testWebSocket(t *testing.T) {
	msgs := []string{"hello", strings.Repeat("x", 300), strings.Repeat("y", 70000)}
	var payload int64
	for _, m := range msgs {
		payload += int64(len(m))
	}
	var echoed [2][]string
	for i, id := range []string{"ws-tap", "ws-plain"} {
		echoed[i] = wsExchange(t, strings.Replace(f.p.sites[6+i], "http://", "ws://", 1)+"/v1/realtime", id, msgs)
	}
	if fmt.Sprint(echoed[0]) != fmt.Sprint(echoed[1]) || fmt.Sprint(echoed[0]) != fmt.Sprint(msgs) {
		t.Errorf("echoes differ: through llmtap %d messages, through the plain proxy %d, sent %d", len(echoed[0]), len(echoed[1]), len(msgs))
	}
	recs := f.p.records(t)
	rec, ok := recs["ws-tap"]
	if !ok {
		t.Fatal("no record of the WebSocket")
	}
	if _, ok := recs["ws-plain"]; ok {
		t.Error("the plain site has a record: the config is not what the test thinks")
	}
	// Each message is framed once each way: at most 14 bytes of frame header, plus the close
	// handshake (a close frame each way, at most 8+123 bytes).
	slack := int64(14*len(msgs) + 2*131)
	if rec.Status != http.StatusSwitchingProtocols || rec.Error != "" {
		t.Errorf("status %d, error %q (%s); want 101 and none", rec.Status, rec.Error, rec.ErrorMsg)
	}
	if rec.Bytes < payload || rec.Bytes > payload+slack || rec.BytesFromClient < payload || rec.BytesFromClient > payload+slack {
		t.Errorf("bytes %d to the client, %d from it; want each in [%d, %d]", rec.Bytes, rec.BytesFromClient, payload, payload+slack)
	}
	if rec.DurationMs <= 0 || rec.RequestLatencyMs != nil || rec.TTFTMs != nil {
		t.Errorf("duration %v ms, request latency %v, ttft %v; want the connection's lifetime and no LLM latencies", rec.DurationMs, rec.RequestLatencyMs, rec.TTFTMs)
	}
	if n := f.p.metricValue(t, "llmtap_upgraded_total", map[string]string{"class": "live"}); n < 1 {
		t.Errorf("llmtap_upgraded_total %v, want at least 1", n)
	}
}

// wsExchange sends msgs over a WebSocket to url and returns the echoes, then closes normally.
func wsExchange(t *testing.T, url, id string, msgs []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"X-Request-Id": {id}},
		HTTPClient: &http.Client{Transport: &http.Transport{DisableCompression: true}},
	})
	if err != nil {
		t.Fatalf("%s: dialling: %v", id, err)
	}
	c.SetReadLimit(1 << 20)
	var got []string
	for _, m := range msgs {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatalf("%s: writing: %v", id, err)
		}
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("%s: reading: %v", id, err)
		}
		got = append(got, string(b))
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("%s: closing: %v", id, err)
	}
	return got
}

// wsEcho is a WebSocket server that echoes every message until the client closes.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for {
		typ, b, err := c.Read(r.Context())
		if err != nil {
			return // the client closed (the library answers its close frame)
		}
		if err := c.Write(r.Context(), typ, b); err != nil {
			return
		}
	}
}

// Lock-step upstream modes (X-Fault): compress with gzip when the request accepts it, or
// compress with br whatever it accepts.
const (
	stepGzipIfAccepted = "gzip_if_accepted"
	stepBrAlways       = "br_always"
)

// stepEvents is how many content events the lock-step upstream writes one at a time.
const stepEvents = 4

const stepUsage = `data: {"id":"c","object":"chat.completion.chunk","model":"fault-model","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}` + "\n\n"

// stepContent is the decoded stream the lock-step upstream sends, with or without the
// usage-only chunk a request with include_usage gets.
func stepContent(usage bool) []byte {
	var b bytes.Buffer
	for k := range stepEvents {
		b.WriteString(sseEvent(fmt.Sprintf(" s%d", k)))
	}
	b.WriteString(lockstepFinish)
	if usage {
		b.WriteString(stepUsage)
	}
	b.WriteString(sseDone)
	return b.Bytes()
}

// stepUpstream is an OpenAI-like server that streams stepContent, compressed as its mode says,
// with the usage chunk only when the request asks for it, writing content event k+1 only once
// the client acknowledged reading event k (10 s at most, then it records why it was stuck and
// writes the rest at once).
type stepUpstream struct {
	mu    sync.Mutex
	acks  map[string]chan struct{}
	stuck map[string]string
}

func (u *stepUpstream) ackCh(id string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.acks[id]
	if !ok {
		c = make(chan struct{}, stepEvents)
		u.acks[id] = c
	}
	return c
}

func (u *stepUpstream) ack(id string) { u.ackCh(id) <- struct{}{} }

func (u *stepUpstream) stuckOf(id string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stuck[id]
}

func (u *stepUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	body, _ := io.ReadAll(r.Body)
	usage := bytes.Contains(body, []byte(`"include_usage":true`))
	var enc interface {
		io.WriteCloser
		Flush() error
	}
	var out io.Writer = w
	switch {
	case r.Header.Get("X-Fault") == stepBrAlways:
		w.Header().Set("Content-Encoding", "br")
		enc = brotli.NewWriter(w)
	case strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"):
		w.Header().Set("Content-Encoding", "gzip")
		enc = gzip.NewWriter(w)
	}
	if enc != nil {
		out = enc
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	flush := func() {
		if enc != nil {
			_ = enc.Flush()
		}
		_ = rc.Flush()
	}
	acks := u.ackCh(id)
	content := stepContent(usage)
	stuck := false
	for k := range stepEvents {
		if k > 0 && !stuck {
			select {
			case <-acks:
			case <-time.After(10 * time.Second):
				u.mu.Lock()
				u.stuck[id] = fmt.Sprintf("the client had not read event %d 10 s after it was written: something on the way held it back", k-1)
				u.mu.Unlock()
				stuck = true // write the rest at once: the client's reads end and the test reports this
			}
		}
		ev := sseEvent(fmt.Sprintf(" s%d", k))
		_, _ = io.WriteString(out, ev)
		content = content[len(ev):]
		flush()
	}
	_, _ = out.Write(content)
	if enc != nil {
		_ = enc.Close()
	}
}

// serveLoopback serves h on a loopback port until the test ends and returns its address.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("upstream: %v", err)
		}
	})
	return ln.Addr().String()
}

// repetitiveChat is a chat stream of n identical content events and [DONE], and its gzip
// encoding without a flush: about the best ratio a real stream reaches.
func repetitiveChat(t *testing.T, n int) (plain, encoded []byte) {
	t.Helper()
	plain = []byte(strings.Repeat(sseEvent("token"), n) + sseDone)
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return plain, z.Bytes()
}

// chunks cuts b into parts of size bytes.
func chunks(b []byte, size int) (out [][]byte) {
	for len(b) > size {
		out = append(out, b[:size])
		b = b[size:]
	}
	return append(out, b)
}
