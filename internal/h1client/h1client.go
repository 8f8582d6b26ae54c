// Package h1client is a lean HTTP/1.1 client transport for load generation: every exchange
// runs on the goroutine that calls RoundTrip, over a pool of kept-alive connections, with
// net/http's own request writer (Request.Write) and response parser (http.ReadResponse).
//
// net/http's Transport is built for everything a program may ask of HTTP; for each request it
// hands the connection between three goroutines (the caller, the connection's writeLoop and
// its readLoop) over channels, and when no idle connection is free at that instant it dials a
// new one even if another is about to be returned. On a small machine at thousands of requests
// per second those hand-offs and dials are a large part of a load generator's CPU (pprof of
// `llmtap bench` at 5,000 req/s on 2 cores: the dials, readLoop and writeLoop about half of the
// profile, their system calls included), and an open-loop generator that
// falls behind dials more, which makes it fall further behind. This transport does one write
// and the reads of the response on the calling goroutine, reuses the most recently returned
// connection first, and dials only when none is idle.
//
// It handles plain-HTTP (http://) requests over HTTP/1.1, which is what load generation on a
// loopback or a private network uses; everything else (https, proxies, protocol upgrades)
// goes to Fallback.
package h1client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for plain-HTTP/1.1 requests. The zero value is not
// usable: build it with a Fallback, or set the fields and leave Fallback nil to refuse what it
// does not handle.
type Transport struct {
	// Fallback takes the requests this transport does not handle: other schemes than http,
	// and requests asking for a protocol upgrade. Nil refuses them with an error.
	Fallback http.RoundTripper
	// MaxIdlePerHost is how many idle connections to keep per host:port. Zero means 10,000
	// (an open loop that fell behind has that many in flight, and closing what it will need
	// again costs more than keeping it).
	MaxIdlePerHost int
	// IdleTimeout closes a connection that stayed idle this long instead of reusing it.
	// Zero means 90 s, net/http's default.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting. Zero means 30 s.
	DialTimeout time.Duration
	// WriteBufferSize and ReadBufferSize size each connection's buffers. Zero means 4 KiB
	// and 16 KiB.
	WriteBufferSize, ReadBufferSize int

	mu     sync.Mutex
	idle   map[string][]*conn // per host:port, most recently returned last; made by put
	closed bool
}

// conn is one kept-alive connection and its buffers.
type conn struct {
	t     *Transport
	addr  string
	nc    net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // when it went idle
	used  bool      // it carried an exchange before the current one
}

// RoundTrip sends req and returns its response, whose body must be read to the end or
// closed, as with any RoundTripper. The connection goes back to the pool when the body has
// been read to its end; a body closed early closes its connection.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || req.Method == http.MethodConnect {
		if t.Fallback != nil {
			return t.Fallback.RoundTrip(req)
		}
		return nil, fmt.Errorf("h1client: cannot send %s %s: only plain http:// requests are handled here", req.Method, req.URL)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	addr := hostPort(req)
	for attempt := 0; ; attempt++ {
		c, err := t.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, stale, err := c.exchange(req)
		if err == nil {
			return resp, nil
		}
		c.close()
		// A kept-alive connection the server had closed fails before a byte of the response
		// arrives; the request is then sent again on a fresh one, as net/http does, when its
		// body can be read again.
		if !stale || attempt > 0 || ctx.Err() != nil {
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// get returns an idle connection to addr, the most recently returned first, or dials one.
func (t *Transport) get(ctx context.Context, addr string) (*conn, error) {
	timeout := t.IdleTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	now := time.Now()
	t.mu.Lock()
	list := t.idle[addr]
	for len(list) > 0 {
		c := list[len(list)-1]
		list[len(list)-1] = nil
		list = list[:len(list)-1]
		if now.Sub(c.since) < timeout {
			t.idle[addr] = list
			t.mu.Unlock()
			return c, nil
		}
		c.nc.Close() // idle too long: the server may have dropped it
	}
	if t.idle != nil {
		t.idle[addr] = list
	}
	t.mu.Unlock()

	d := net.Dialer{Timeout: t.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 30 * time.Second
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	wb, rb := t.WriteBufferSize, t.ReadBufferSize
	if wb <= 0 {
		wb = 4 << 10
	}
	if rb <= 0 {
		rb = 16 << 10
	}
	return &conn{t: t, addr: addr, nc: nc, br: bufio.NewReaderSize(nc, rb), bw: bufio.NewWriterSize(nc, wb)}, nil
}

// put returns a connection whose exchange ended cleanly to the pool.
func (t *Transport) put(c *conn) {
	limit := t.MaxIdlePerHost
	if limit <= 0 {
		limit = 10000
	}
	c.used = true
	c.since = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle[c.addr]) >= limit {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	t.idle[c.addr] = append(t.idle[c.addr], c)
	t.mu.Unlock()
}

// CloseIdleConnections closes the idle connections. Connections in use close or return to the
// pool when their exchange ends.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Close closes the idle connections and stops pooling: connections whose exchange ends later
// are closed.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
}

// aLongTimeAgo is a deadline in the past: setting it makes blocked reads and writes return.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req and reads the response's head on this goroutine; the body is read by the
// caller through the returned response. On an error the caller closes the connection; stale
// reports that the error came from a kept-alive connection the server had closed before any
// byte of the response, so that the request may be sent again.
func (c *conn) exchange(req *http.Request) (resp *http.Response, stale bool, err error) {
	ctx := req.Context()
	stop := func() bool { return true }
	if ctx.Done() != nil {
		// A cancelled request unblocks whatever read or write it is in.
		stop = context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	}
	fail := func(err error, stale bool) (*http.Response, bool, error) {
		stop()
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, cerr
		}
		return nil, stale, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err, c.stale(err, true))
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err, c.stale(err, true))
	}
	// Nothing of the response yet: a kept-alive connection the server closed fails here.
	if _, err := c.br.Peek(1); err != nil {
		return fail(err, c.stale(err, false))
	}
	for {
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return fail(err, false)
		}
		// 1xx informational responses (100 Continue, 103 Early Hints) precede the real one.
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		// No body to wait for: the connection is free now.
		if stop() && keep {
			c.put()
		} else {
			c.close()
		}
		return resp, false, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, stop: stop, keep: keep}
	return resp, false, nil
}

// stale reports whether err, met while writing a request or waiting for its response's first
// byte, says that the server had closed this kept-alive connection.
func (c *conn) stale(err error, writing bool) bool {
	return c.used && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		(!writing && errors.Is(err, io.ErrUnexpectedEOF)))
}

func (c *conn) put()   { c.t.put(c) }
func (c *conn) close() { c.nc.Close() }

// body is a response body that returns its connection to the pool at its end.
type body struct {
	rc   io.ReadCloser
	c    *conn
	stop func() bool
	keep bool
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

// Close ends the exchange: a body not read to its end leaves the connection mid-response, so
// it is closed rather than reused.
func (b *body) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

func (b *body) finish(complete bool) {
	b.done = true
	// stop reports false when the request's cancellation already poisoned the connection's
	// deadline (or is about to): such a connection is not reused.
	if b.stop() && complete && b.keep {
		b.c.put()
	} else {
		b.c.close()
	}
}

// hostPort returns req's host:port, port 80 when the URL names none.
func hostPort(req *http.Request) string {
	host := req.URL.Host
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return host
	}
	return net.JoinHostPort(req.URL.Hostname(), "80")
}
