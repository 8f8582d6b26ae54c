package h1server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// start serves h on a loopback port and returns its base URL.
func start(t *testing.T, h http.Handler, fallback func(net.Conn), opts ...func(*Server)) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Fallback: fallback}
	for _, o := range opts {
		o(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return "http://" + ln.Addr().String(), s
}

// rawExchange writes raw to a new connection and returns everything the server sends until
// it closes the connection or a second passes without a byte.
func rawExchange(t *testing.T, base, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, raw)
	c.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestRequestsAndKeepAlive(t *testing.T) {
	var conns atomic.Int64
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Remote-Set", fmt.Sprint(r.RemoteAddr != ""))
		fmt.Fprintf(w, "%s %s %s %q", r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), b)
	}), nil)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for i := range 10 {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/x?i="+fmt.Sprint(i), strings.NewReader(`{"n":1}`))
		req.Header.Set("X-Test", "yes")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf(`POST /v1/x?i=%d yes "{\"n\":1}"`, i)
		if resp.StatusCode != 200 || string(b) != want || resp.ContentLength != int64(len(want)) ||
			resp.Header.Get("X-Remote-Set") != "true" || resp.Header.Get("Date") == "" {
			t.Fatalf("request %d: %d %q (length %d) %v, want %q", i, resp.StatusCode, b, resp.ContentLength, resp.Header, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("10 sequential requests over %d connections, want 1", n)
	}
}

func TestFlushedStreamIsChunkedAndArrivesAsWritten(t *testing.T) {
	next := make(chan struct{})
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			if err := http.NewResponseController(w).Flush(); err != nil {
				return
			}
			<-next
		}
	}), nil)
	resp, err := http.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v", resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q %v (an event that waits for the next one was not flushed)", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the events: %q %v", rest, err)
	}
}

func TestStatusesHeadAndHTTP10(t *testing.T) {
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
			io.WriteString(w, "ignored")
		case "/418":
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "short and stout")
		case "/hints":
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			io.WriteString(w, "after hints")
		case "/stream":
			io.WriteString(w, "part one ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part two")
		default:
			io.WriteString(w, "<html>hello</html>")
		}
	}), nil)
	for _, tc := range []struct{ raw, want []string }{
		{[]string{"GET /204 HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"HTTP/1.1 204 No Content\r\n"}},
		{[]string{"GET /418 HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"HTTP/1.1 418 I'm a teapot\r\n", "Content-Length: 15\r\n", "\r\n\r\nshort and stout"}},
		{[]string{"GET /hints HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n", "after hints"}},
		{[]string{"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"HTTP/1.1 200 OK\r\n", "Content-Length: 18\r\n", "Content-Type: text/html; charset=utf-8\r\n"}},
		// HTTP/1.0 has no chunked encoding: a flushed body ends with the connection.
		{[]string{"GET /stream HTTP/1.0\r\n\r\n"}, []string{"HTTP/1.1 200 OK\r\n", "Connection: close\r\n", "\r\n\r\npart one part two"}},
		{[]string{"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"}, []string{"Connection: close\r\n", "<html>hello</html>"}},
	} {
		got := rawExchange(t, base, strings.Join(tc.raw, ""))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q:\ngot %q\nwant it to contain %q", tc.raw, got, w)
			}
		}
		if strings.HasPrefix(tc.raw[0], "HEAD") && strings.Contains(got, "<html>") {
			t.Errorf("HEAD sent a body: %q", got)
		}
		if strings.HasPrefix(tc.raw[0], "GET /204") && strings.Contains(got, "ignored") {
			t.Errorf("204 sent a body: %q", got)
		}
	}
}

func TestBadRequestsGetErrorsNotPanics(t *testing.T) {
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("handler bug")
		}
		io.WriteString(w, "ok")
	}), nil, func(s *Server) { s.MaxHeaderBytes = 4 << 10 })
	if got := rawExchange(t, base, "NOT HTTP AT ALL\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400 Bad Request\r\n") {
		t.Errorf("garbage: %q", got)
	}
	huge := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
	if got := rawExchange(t, base, huge); !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Errorf("64 KiB header against a 4 KiB limit: %q", got[:min(len(got), 200)])
	}
	// A panicking handler closes its connection; the server goes on serving.
	if got := rawExchange(t, base, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n"); got != "" {
		t.Errorf("after a panic the client got %q, want the connection closed", got)
	}
	if got := rawExchange(t, base, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); !strings.HasSuffix(got, "\r\n\r\nok") {
		t.Errorf("after the panic: %q", got)
	}
}

func TestUnreadBodyIsSkippedForTheNextRequest(t *testing.T) {
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path) // never reads the body
	}), nil)
	raw := "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789" +
		"GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	got := rawExchange(t, base, raw)
	if !strings.Contains(got, "\r\n\r\n/first") || !strings.HasSuffix(got, "\r\n\r\n/second") {
		t.Fatalf("pipelined requests after an unread body: %q", got)
	}
}

func TestClientGoneFailsWritesAndCancelsTheContext(t *testing.T) {
	result := make(chan error, 1)
	base, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 10000 {
			if _, err := w.Write(chunk); err != nil {
				break
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				break
			}
		}
		select {
		case <-r.Context().Done():
			result <- nil
		case <-time.After(5 * time.Second):
			result <- errors.New("the request context was not cancelled after the client left")
		}
	}), nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.Read(make([]byte, 1024))
	c.Close()
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler kept writing to a client that had gone")
	}
}

func TestH2CGoesToTheFallback(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s via %s", r.URL.Path, r.Proto)
	})
	// The fallback as mockllm uses it: x/net/http2 serving one handed-over connection, which
	// net/http has no API for; the client is x/net/http2's h2c transport to match.
	h2 := &http2.Server{} //lint:ignore SA1019 no net/http API serves one handed-over h2c connection
	//lint:ignore SA1019 as above
	base, _ := start(t, h, func(c net.Conn) { h2.ServeConn(c, &http2.ServeConnOpts{Handler: h}) })
	//lint:ignore SA1019 the h2c client of the same package
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections() //lint:ignore SA1019 as above
	resp, err := (&http.Client{Transport: tr}).Get(base + "/h2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "/h2 via HTTP/2.0" {
		t.Fatalf("h2c: %q", b)
	}
	// HTTP/1.1 still works beside it.
	resp, err = http.Get(base + "/h1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "/h1 via HTTP/1.1" {
		t.Fatalf("HTTP/1.1: %q", b)
	}
}

func TestCloseEndsConnectionsAndServe(t *testing.T) {
	started := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.Read(make([]byte, 512))
			started <- struct{}{}
			io.ReadAll(c) // until the server closes the kept-alive connection
		})
	}
	for range 4 {
		<-started
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with idle kept-alive connections open")
	}
	wg.Wait()
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}
