// Package h1server serves an http.Handler over HTTP/1.1 with as little work per request as the
// protocol allows: one goroutine per connection that reads a request with net/http's own parser
// (http.ReadRequest), runs the handler on that goroutine, and writes the response through one
// buffered writer. It is for the mock inference server when it shares a small machine with the
// load generator or proxy being measured: net/http's Server also runs a background read per
// request (to notice a client that goes away), builds a response object with its own buffers,
// and sniffs content types. BenchmarkUnaryServers in mock (-cpu 1, one client): 75–107
// µs of CPU per small exchange, client and server together, against net/http's 97–124 µs.
//
// What it leaves out, on purpose: TLS, HTTP/2 (a client that opens with the HTTP/2 preface is
// handed to Fallback), trailers, Hijack, and noticing a client that disconnects while the
// handler is not writing: the request's context is cancelled when a write to the client
// fails, when the server closes, or when the handler returns.
package h1server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server serves Handler on the listeners given to Serve.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// Fallback, when set, is given the connections that open with the HTTP/2 client preface
	// (h2c with prior knowledge), already read bytes included; nil closes them.
	Fallback func(net.Conn)
	// BaseContext is the parent of every request's context. Nil means context.Background().
	BaseContext context.Context
	// MaxHeaderBytes bounds a request's header block. Zero means 1 MiB, net/http's default.
	MaxHeaderBytes int

	mu     sync.Mutex
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("h1server: server closed")

// Serve accepts connections on ln until Close, serving each on a goroutine of its own.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if s.lns == nil {
		s.lns, s.conns = map[net.Listener]struct{}{}, map[net.Conn]struct{}{}
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

// Close stops the listeners and closes every connection; handlers still running see their
// request contexts cancelled (through BaseContext, which the caller cancels) and their writes
// fail. It waits for every connection's goroutine to return.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) forget(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	s.wg.Done()
}

// h2Preface is how an HTTP/2 client with prior knowledge opens a connection.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

var bufPool = sync.Pool{New: func() any {
	return &connBufs{br: bufio.NewReaderSize(nil, 16<<10), bw: bufio.NewWriterSize(nil, 16<<10)}
}}

type connBufs struct {
	br *bufio.Reader
	bw *bufio.Writer
}

func (s *Server) serveConn(nc net.Conn) {
	defer func() {
		nc.Close()
		s.forget(nc)
	}()
	bufs := bufPool.Get().(*connBufs)
	bufs.bw.Reset(nc)
	defer func() {
		bufs.br.Reset(nil)
		bufs.bw.Reset(nil)
		bufPool.Put(bufs)
	}()
	maxHeader := s.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = 1 << 20
	}
	cr := &connReader{nc: nc, left: maxHeader}
	bufs.br.Reset(cr)
	br, bw := bufs.br, bufs.bw
	if isH2(br) {
		if s.Fallback != nil {
			read, _ := br.Peek(br.Buffered())
			s.Fallback(&peekedConn{Conn: nc, r: io.MultiReader(bytes.NewReader(append([]byte(nil), read...)), nc)})
		}
		return
	}
	base := s.BaseContext
	if base == nil {
		base = context.Background()
	}
	remote := nc.RemoteAddr().String()
	w := &responseWriter{bw: bw, header: make(http.Header)}
	for {
		if base.Err() != nil {
			return
		}
		cr.left = maxHeader + br.Size() // the head, and what the reader buffers past it
		req, err := http.ReadRequest(br)
		cr.left = -1 // the body is not limited here
		if err != nil {
			switch {
			case errors.Is(err, errHeaderTooLarge):
				writeRefusal(bw, http.StatusRequestHeaderFieldsTooLarge)
			case err != io.EOF && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF):
				// A request that cannot be parsed gets a 400, as net/http answers it.
				writeRefusal(bw, http.StatusBadRequest)
			}
			return
		}
		req.RemoteAddr = remote
		ctx, cancel := context.WithCancel(base)
		req = req.WithContext(ctx)
		if req.Header.Get("Expect") == "100-continue" && req.ContentLength != 0 {
			io.WriteString(bw, "HTTP/1.1 100 Continue\r\n\r\n")
			bw.Flush()
		}
		w.reset(req, cancel)
		if !s.serve(w, req) {
			cancel()
			return // the handler panicked: the connection is closed, as net/http does
		}
		w.finish()
		cancel()
		// What the handler left of the body is read away so the next request starts where
		// it should; a body too large to skip closes the connection instead.
		if req.Body != nil {
			if n, _ := io.CopyN(io.Discard, req.Body, 256<<10); n == 256<<10 {
				return
			}
			req.Body.Close()
		}
		if w.failed || w.closeAfter || req.Close {
			return
		}
	}
}

// writeRefusal answers a request that could not be read with status code and closes the
// exchange: the status line and its text as a plain-text body, as net/http answers.
func writeRefusal(bw *bufio.Writer, code int) {
	status := strconv.Itoa(code) + " " + http.StatusText(code)
	io.WriteString(bw, "HTTP/1.1 "+status+"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+status)
	bw.Flush()
}

// serve runs the handler, and reports false when it panicked. A panic is logged (unless it is
// http.ErrAbortHandler, which handlers use to abort a response on purpose) and does not take
// the process down.
func (s *Server) serve(w *responseWriter, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				log.Printf("h1server: panic serving %s %s: %v\n%s", req.Method, req.URL, v, debug.Stack())
			}
			ok = false
		}
	}()
	s.Handler.ServeHTTP(w, req)
	return true
}

// isH2 reports whether the connection opens with the HTTP/2 preface. It waits for more bytes
// only while what arrived so far is a beginning of the preface, so a short HTTP/1 request is
// never held up.
func isH2(br *bufio.Reader) bool {
	if _, err := br.Peek(1); err != nil {
		return false
	}
	p, _ := br.Peek(min(br.Buffered(), len(h2Preface)))
	if !strings.HasPrefix(h2Preface, string(p)) {
		return false
	}
	p, err := br.Peek(len(h2Preface))
	return err == nil && string(p) == h2Preface
}

// connReader reads the connection for the buffered reader, and fails once a request's head
// has taken more than left bytes (left < 0: no limit, while the body is read).
type connReader struct {
	nc   net.Conn
	left int
}

var errHeaderTooLarge = errors.New("h1server: request header too large")

func (c *connReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, errHeaderTooLarge
	}
	if c.left > 0 && len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.nc.Read(p)
	if c.left > 0 {
		c.left -= n
	}
	return n, err
}

type peekedConn struct {
	net.Conn
	r io.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// responseWriter writes one response at a time to its connection's buffered writer. A
// response the handler never flushes is sent with a Content-Length; once it flushes, the rest
// goes out chunked (unless the handler set Content-Length itself).
type responseWriter struct {
	bw     *bufio.Writer
	header http.Header
	req    *http.Request
	cancel context.CancelFunc

	status      int
	wroteHeader bool // the handler set the status (or wrote)
	sentHeader  bool // the status line and headers are on the wire (or in bw)
	chunked     bool
	bodyless    bool // 204, 304: no body
	head        bool // a HEAD request: the body is counted for Content-Length, not sent
	headLen     int
	pending     []byte
	failed      bool // a write to the client failed: the client is gone
	closeAfter  bool
	scratch     [32]byte
}

func (w *responseWriter) reset(req *http.Request, cancel context.CancelFunc) {
	clear(w.header)
	w.req, w.cancel = req, cancel
	w.status, w.wroteHeader, w.sentHeader, w.chunked, w.bodyless, w.closeAfter = 0, false, false, false, false, false
	w.head, w.headLen = req.Method == http.MethodHead, 0
	w.pending = w.pending[:0]
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader || w.failed {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// Informational: sent at once, the real status follows.
		w.writeStatusLine(code)
		w.header.Write(w.bw)
		w.bw.WriteString("\r\n")
		w.flushWire()
		return
	}
	w.wroteHeader, w.status = true, code
	w.bodyless = code == http.StatusNoContent || code == http.StatusNotModified
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.failed {
		return 0, errClientGone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.bodyless {
		return len(p), nil
	}
	if w.head {
		// Counted for Content-Length; the first bytes kept to sniff the Content-Type.
		w.headLen += len(p)
		if len(w.pending) < 512 {
			w.pending = append(w.pending, p[:min(len(p), 512-len(w.pending))]...)
		}
		return len(p), nil
	}
	if !w.sentHeader {
		w.pending = append(w.pending, p...)
		if len(w.pending) > 64<<10 {
			w.sendHeader(-1)
			w.writeBody(w.pending)
			w.pending = w.pending[:0]
		}
		return len(p), nil
	}
	w.writeBody(p)
	if w.failed {
		return 0, errClientGone
	}
	return len(p), nil
}

var errClientGone = errors.New("h1server: the client closed the connection")

// Flush sends the headers (chunked, unless the handler set a Content-Length) and what the
// handler wrote so far.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush that reports a client that went away.
func (w *responseWriter) FlushError() error {
	if w.failed {
		return errClientGone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHeader {
		w.sendHeader(-1)
		if len(w.pending) > 0 && !w.bodyless && !w.head {
			w.writeBody(w.pending)
		}
		w.pending = w.pending[:0]
	}
	w.flushWire()
	if w.failed {
		return errClientGone
	}
	return nil
}

// finish ends the response after the handler returned.
func (w *responseWriter) finish() {
	if w.failed {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHeader {
		length := len(w.pending)
		if w.head {
			length = w.headLen
		}
		w.sendHeader(length)
		if !w.bodyless && !w.head {
			w.writeBody(w.pending)
		}
	} else if w.chunked {
		w.bw.WriteString("0\r\n\r\n")
	}
	w.flushWire()
}

// sendHeader writes the status line and headers. length is the body's length when the whole
// body is known, or -1 when it is still being written (then it is chunked unless the handler
// set Content-Length).
func (w *responseWriter) sendHeader(length int) {
	w.sentHeader = true
	h := w.header
	if w.req.Close {
		h["Connection"] = []string{"close"}
	}
	if h.Get("Connection") == "close" {
		w.closeAfter = true
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	}
	if !w.bodyless {
		if _, ok := h["Content-Type"]; !ok && len(w.pending) > 0 {
			h["Content-Type"] = []string{http.DetectContentType(w.pending)}
		}
		switch {
		case h.Get("Content-Length") != "":
		case w.head && length < 0:
			// A flushed HEAD response: the length is not known, and no body follows.
		case length >= 0:
			h["Content-Length"] = []string{strconv.Itoa(length)}
		case !w.req.ProtoAtLeast(1, 1):
			// HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
			w.closeAfter = true
		default:
			w.chunked = true
			h["Transfer-Encoding"] = []string{"chunked"}
		}
	}
	w.writeStatusLine(w.status)
	if err := h.Write(w.bw); err != nil {
		w.fail()
	}
	w.bw.WriteString("\r\n")
}

func (w *responseWriter) writeStatusLine(code int) {
	b := append(w.scratch[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	w.bw.Write(b)
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	w.bw.WriteString(text)
	w.bw.WriteString("\r\n")
}

func (w *responseWriter) writeBody(p []byte) {
	if len(p) == 0 {
		return
	}
	if w.chunked {
		b := strconv.AppendInt(w.scratch[:0], int64(len(p)), 16)
		b = append(b, '\r', '\n')
		w.bw.Write(b)
		w.bw.Write(p)
		if _, err := w.bw.WriteString("\r\n"); err != nil {
			w.fail()
		}
		return
	}
	if _, err := w.bw.Write(p); err != nil {
		w.fail()
	}
}

func (w *responseWriter) flushWire() {
	if err := w.bw.Flush(); err != nil {
		w.fail()
	}
}

// fail marks the client gone and cancels the request's context, so a handler waiting between
// writes stops.
func (w *responseWriter) fail() {
	w.failed = true
	w.cancel()
}

var _ http.Flusher = (*responseWriter)(nil)
