// Package capture keeps the start of a request body while it passes, unchanged, to whoever
// reads it (a reverse proxy's transport), so that a measurement can read the request (its
// model, its prompt) without holding or delaying the body.
package capture

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Body passes the request body to the upstream unchanged while keeping its first max
// bytes for the meter. It is safe for concurrent use. The transport reads it on its own goroutine, which may still be reading
// when the handler has its answer (an upstream may reply before it has read the body), so the
// capture is guarded and the handler takes it with Captured, which ends it.
type Body struct {
	io.ReadCloser // the client's body; nil for Whole
	mu            sync.Mutex
	buf           []byte
	max           int
	length        int64 // the request's Content-Length, -1 when unknown
	read          int64 // bytes read from the client's body
	ended         bool  // the client's body returned io.EOF
	sealed        bool  // Captured was called: later reads pass through uncaptured
	truncated     bool
}

// New captures the first max bytes of the body rc (length: its Content-Length, -1 when
// unknown). Put it in the request's place of rc.
func New(rc io.ReadCloser, length int64, max int) *Body {
	initial := max
	if length > 0 && length < int64(initial) {
		initial = int(length)
	}
	return &Body{ReadCloser: rc, buf: make([]byte, 0, min(initial, 64<<10)), max: max, length: length}
}

// Whole is a body that was already read in full (a body rewritten for the upstream: the client's original).
func Whole(b []byte) *Body { return &Body{buf: b, ended: true} }

// Close closes the client's body, unless nothing was read from it: a transport closes the body
// of a request it could not send (a dead upstream), and the handler then reads the start of
// it to learn what the request named (ReadUnsent). The server closes it after the handler.
func (c *Body) Close() error {
	c.mu.Lock()
	unread := c.read == 0
	c.mu.Unlock()
	if unread {
		return nil
	}
	return c.ReadCloser.Close()
}

// unsentBodyWait bounds how long ReadUnsent waits for a body the upstream never read.
const unsentBodyWait = 100 * time.Millisecond

// ReadUnsent reads the start of a body that no upstream read (up to the capture's cap, for at
// most unsentBodyWait), so that the record of a request that could not be sent still names the
// model it asked for. It runs after the next handler failed, before the error response; w is that response's
// writer, whose read deadline bounds the wait.
func (c *Body) ReadUnsent(w http.ResponseWriter) {
	c.mu.Lock()
	unread := c.read == 0
	c.mu.Unlock()
	if c.ReadCloser == nil || !unread || c.max <= 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(unsentBodyWait)) != nil {
		return // no deadline possible: do not wait on the client
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, int64(c.max)+1))
	_ = rc.SetReadDeadline(time.Time{})
}

func (c *Body) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read += int64(n)
	if err == io.EOF {
		c.ended = true
	}
	if n > 0 && !c.sealed {
		room := c.max - len(c.buf)
		switch {
		case room >= n:
			c.buf = append(c.buf, p[:n]...)
		case room > 0:
			c.buf = append(c.buf, p[:room]...)
			c.truncated = true
		default:
			c.truncated = true
		}
	}
	return n, err
}

// Peek returns the bytes captured so far and whether more were read than kept. The slice's
// bytes do not change afterwards (a later read only appends past them).
func (c *Body) Peek() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.truncated
}

// Captured ends the capture and returns its bytes, and whether they are less than the whole
// body: more was read than kept, or the body had not been read to its end (the upstream
// answered first, or never read it all). Reads after it pass through uncaptured.
func (c *Body) Captured() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	whole := c.ended || (c.length >= 0 && c.read >= c.length)
	return c.buf, c.truncated || !whole
}
