package commands

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"
)

// BodyLog wraps a handler (the mock server) and keeps what arrived, for the tests here that check
// what a client sent: each request's arrival time, path, X-Request-Id and X-Correlation-Id,
// its body and the response body, in arrival order. It is bounded: at most Max requests
// (later ones pass unlogged, counted in Dropped) and MaxBody bytes of each body.
type BodyLog struct {
	// Next serves the requests. Required.
	Next http.Handler
	// Max is the number of requests kept (default 10,000); MaxBody the bytes kept of each
	// request and response body (default 1 MiB).
	Max, MaxBody int

	mu      sync.Mutex
	entries []*BodyEntry
	dropped int
}

// BodyEntry is one logged request.
type BodyEntry struct {
	Arrived       time.Time
	Path          string
	RequestID     string
	CorrelationID string
	Body          []byte
	// Response is the response body as written (bounded like Body), and LastWrite when its
	// last write began: a client cannot have read the response's end before it. Both are set
	// once the handler returned (LastWrite stays zero until then).
	Response  []byte
	LastWrite time.Time
}

func (l *BodyLog) limits() (int, int) {
	m, b := l.Max, l.MaxBody
	if m <= 0 {
		m = 10000
	}
	if b <= 0 {
		b = 1 << 20
	}
	return m, b
}

// ServeHTTP logs r and its response, and serves it with Next.
func (l *BodyLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	maxN, maxBody := l.limits()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	e := &BodyEntry{Arrived: arrived, Path: r.URL.Path, RequestID: r.Header.Get("X-Request-Id"),
		CorrelationID: r.Header.Get("X-Correlation-Id"), Body: body[:min(len(body), maxBody)]}
	l.mu.Lock()
	keep := len(l.entries) < maxN
	if keep {
		l.entries = append(l.entries, e)
	} else {
		l.dropped++
	}
	l.mu.Unlock()
	if !keep {
		l.Next.ServeHTTP(w, r)
		return
	}
	rw := &bodyLogWriter{ResponseWriter: w, max: maxBody}
	l.Next.ServeHTTP(rw, r)
	l.mu.Lock()
	e.Response, e.LastWrite = rw.buf, rw.last
	if e.LastWrite.IsZero() {
		e.LastWrite = time.Now() // nothing was written
	}
	l.mu.Unlock()
}

// Entries returns the logged requests in arrival order. A response still being written has
// no Response yet. The byte slices must not be changed.
func (l *BodyLog) Entries() []BodyEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]BodyEntry, len(l.entries))
	for i, e := range l.entries {
		out[i] = *e
	}
	return out
}

// Dropped is the number of requests past Max, served but not logged.
func (l *BodyLog) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// bodyLogWriter keeps the first max bytes written; Unwrap lets the handler flush through it.
type bodyLogWriter struct {
	http.ResponseWriter
	max  int
	buf  []byte
	last time.Time
}

func (w *bodyLogWriter) Write(p []byte) (int, error) {
	w.last = time.Now()
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(len(p), room)]...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *bodyLogWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the wrapped writer, for handlers that assert http.Flusher.
func (w *bodyLogWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
