package h1client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is a real net/http server on loopback that counts the connections it accepted.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTransport(t *testing.T) *Transport {
	tr := &Transport{}
	t.Cleanup(tr.Close)
	return tr
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func TestKeepAliveReusesOneConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		fmt.Fprintf(w, "%s %s %s len=%d", r.Method, r.URL.RequestURI(), b, r.ContentLength)
	})
	c := &http.Client{Transport: newTransport(t)}
	for i := range 20 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		code, got, h := do(t, c, http.MethodPost, s.URL+"/v1/chat/completions?x=1", body)
		want := fmt.Sprintf("POST /v1/chat/completions?x=1 %s len=%d", body, len(body))
		if code != 200 || got != want || h.Get("X-Method") != "POST" {
			t.Fatalf("request %d: %d %q %v, want 200 %q", i, code, got, h, want)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("20 sequential requests used %d connections, want 1", n)
	}
}

func TestChunkedStreamArrivesAsWritten(t *testing.T) {
	gate := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-gate // the second event only after the client has read the first
		io.WriteString(w, "data: two\n\n")
	})
	tr := newTransport(t)
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", resp.TransferEncoding)
	}
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: one\n\n" {
		t.Fatalf("first read %q %v", buf[:n], err)
	}
	close(gate)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\n" {
		t.Fatalf("rest %q %v", rest, err)
	}
	resp.Body.Close()
	// Read to its end, the connection is reused.
	do(t, &http.Client{Transport: tr}, http.MethodGet, s.URL, "")
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// oneShotServer answers each connection's first request and then closes it, the way a server
// drops a kept-alive connection, so the client's pooled connection is stale.
func oneShotServer(t *testing.T) (addr string, conns *atomic.Int64, bodies chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = new(atomic.Int64)
	bodies = make(chan string, 16)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer nc.Close()
				req, err := http.ReadRequest(bufio.NewReader(nc))
				if err != nil {
					return
				}
				b, _ := io.ReadAll(req.Body)
				bodies <- string(b)
				// No Connection: close: the client believes it may keep the connection.
				fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	return ln.Addr().String(), conns, bodies
}

func TestStaleConnectionIsRetriedWithTheSameBody(t *testing.T) {
	addr, conns, bodies := oneShotServer(t)
	c := &http.Client{Transport: newTransport(t)}
	for i := range 3 {
		body := fmt.Sprintf(`{"turn":%d}`, i)
		// Let the server's close reach the client's pooled connection first.
		time.Sleep(20 * time.Millisecond)
		code, got, _ := do(t, c, http.MethodPost, "http://"+addr+"/x", body)
		if code != 200 || got != "ok" {
			t.Fatalf("request %d: %d %q", i, code, got)
		}
		if b := <-bodies; b != body {
			t.Fatalf("the server read %q, want %q", b, body)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections for 3 requests to a server that closes each, want 3", n)
	}
}

func TestCancelUnblocksAReadAndDropsTheConnection(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			return
		}
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tr := newTransport(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a read blocked on a cancelled request returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling did not unblock the read")
	}
	resp.Body.Close()
	// The cancelled connection is not reused: the next request dials.
	do(t, &http.Client{Transport: tr}, http.MethodGet, s.URL+"/quick", "")
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the cancelled one dropped)", n)
	}
}

func TestEarlyCloseAndConnectionCloseAreNotReused(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, strings.Repeat("x", 100000))
	})
	tr := newTransport(t)
	c := &http.Client{Transport: tr}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/big", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close() // mid-body
	do(t, c, http.MethodGet, s.URL+"/close", "")
	do(t, c, http.MethodGet, s.URL+"/after", "")
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3: neither a half-read body's nor a Connection: close one is reused", n)
	}
}

func TestInformationalAndBodylessResponses(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "real")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "head")
		}
	})
	c := &http.Client{Transport: newTransport(t)}
	if code, got, _ := do(t, c, http.MethodGet, s.URL+"/hints", ""); code != 200 || got != "real" {
		t.Fatalf("after 103: %d %q", code, got)
	}
	if code, got, _ := do(t, c, http.MethodGet, s.URL+"/empty", ""); code != 204 || got != "" {
		t.Fatalf("204: %d %q", code, got)
	}
	if code, got, _ := do(t, c, http.MethodHead, s.URL+"/", ""); code != 200 || got != "" {
		t.Fatalf("HEAD: %d %q", code, got)
	}
	if code, got, _ := do(t, c, http.MethodGet, s.URL+"/", ""); code != 200 || got != "head" {
		t.Fatalf("GET after HEAD: %d %q", code, got)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(bytes.ToUpper(b))
	})
	c := &http.Client{Transport: newTransport(t)}
	const workers, each = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("w%d-r%d", g, i)
				req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
				resp, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != strings.ToUpper(body) {
					errs <- fmt.Errorf("%q: got %q %v", body, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.conns.Load(); n > workers {
		t.Fatalf("%d connections for %d concurrent workers", n, workers)
	}
}

type recordingRT struct{ urls []string }

func (r *recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.String())
	return nil, errors.New("fallback reached")
}

func TestOtherSchemesGoToTheFallback(t *testing.T) {
	fb := &recordingRT{}
	tr := &Transport{Fallback: fb}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:1/x", nil)
	if _, err := tr.RoundTrip(req); err == nil || err.Error() != "fallback reached" {
		t.Fatalf("https: %v", err)
	}
	if len(fb.urls) != 1 {
		t.Fatalf("fallback saw %v", fb.urls)
	}
	bare := &Transport{}
	if _, err := bare.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "only plain http://") {
		t.Fatalf("no fallback: %v", err)
	}
}

func TestDialFailureIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	_, err = newTransport(t).RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("got %v, want a dial error", err)
	}
}

// TestCancelledBeforeSendingLeavesThePoolAlone: a request whose context is already done fails
// with the context's error without touching the kept-alive connection, which the next request
// reuses.
func TestCancelledBeforeSendingLeavesThePoolAlone(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTransport(t)
	c := &http.Client{Transport: tr}
	do(t, c, http.MethodGet, s.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if code, got, _ := do(t, c, http.MethodGet, s.URL, ""); code != 200 || got != "ok" {
		t.Fatalf("after the cancelled request: %d %q", code, got)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want the one kept alive", n)
	}
}
