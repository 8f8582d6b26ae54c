// Package tee keeps the exact response bytes an upstream sent, per X-Request-Id, so end-to-end
// tests can compare what a client received through llmtap with what the server wrote.
package tee

import (
	"bytes"
	"net/http"
	"sync"
	"time"
)

// Tee serves requests with Next and keeps a copy of each response body whose request carried an
// X-Request-Id. Flushes pass straight through, so streams keep their timing.
type Tee struct {
	Next http.Handler

	mu   sync.Mutex
	sent map[string][]byte
}

// New returns a Tee in front of next.
func New(next http.Handler) *Tee { return &Tee{Next: next} }

// ServeHTTP serves r with t.Next and stores what it wrote once the handler returns.
func (t *Tee) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	t.Next.ServeHTTP(&writer{ResponseWriter: w, buf: &buf}, r)
	if id := r.Header.Get("X-Request-Id"); id != "" {
		t.mu.Lock()
		if t.sent == nil {
			t.sent = make(map[string][]byte)
		}
		t.sent[id] = buf.Bytes()
		t.mu.Unlock()
	}
}

// Sent returns what the upstream wrote for request id, if its handler has returned.
func (t *Tee) Sent(id string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.sent[id]
	return b, ok
}

// Wait is Sent, waiting up to timeout for the entry: a response with a Content-Length can reach
// the client before the upstream's handler returns and the tee stores it.
func (t *Tee) Wait(id string, timeout time.Duration) ([]byte, bool) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(time.Millisecond) {
		if b, ok := t.Sent(id); ok || time.Now().After(deadline) {
			return b, ok
		}
	}
}

// writer copies every byte written; flushes go through to the real writer.
type writer struct {
	http.ResponseWriter
	buf *bytes.Buffer
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.buf.Write(p[:n])
	return n, err
}

func (w *writer) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
