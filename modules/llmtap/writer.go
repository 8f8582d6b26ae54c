package llmtap

import (
	"io"
	"net/http"

	"github.com/llmtap/llmtap/telemetry/meter"
)

// tapWriter passes every byte to the client unchanged and immediately, and feeds a copy of what
// it wrote, with the time it was handed the bytes, to the meter. Flushes go straight through,
// so the client sees them exactly when the upstream's copy loop asked for them.
type tapWriter struct {
	http.ResponseWriter
	m           *meter.Meter
	wroteHeader bool
	// clientGone is set when a write to the client failed: the client went away.
	clientGone bool
}

// WriteHeader records the response headers' time and status, then sends them.
func (w *tapWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		// 1xx responses (103 Early Hints) are informational: the real headers follow.
		w.wroteHeader = true
		w.m.Headers(code, w.Header(), w.m.Now())
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends p to the client first and measures it after, so measuring never delays a byte.
// The time is taken before the write: it is when the bytes reached llmtap's writer.
func (w *tapWriter) Write(p []byte) (int, error) {
	at := w.m.Now()
	if !w.wroteHeader {
		w.wroteHeader = true
		w.m.Headers(http.StatusOK, w.Header(), at)
	}
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.m.Write(p[:n], at)
	}
	if err != nil {
		w.clientGone = true
	}
	return n, err
}

// ReadFrom routes io.Copy through Write, so callers that use it (file servers, some proxies)
// are measured like any other writer.
func (w *tapWriter) ReadFrom(r io.Reader) (int64, error) {
	bp := proc.copyBuf.Get().(*[]byte)
	defer proc.copyBuf.Put(bp)
	return io.CopyBuffer(writerOnly{w}, r, *bp)
}

// FlushError flushes the underlying writer (through http.ResponseController, which finds the
// right method on whatever the writer wraps).
func (w *tapWriter) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for callers that use http.Flusher.
func (w *tapWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the real writer for deadlines, hijacking and full
// duplex.
func (w *tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly hides ReadFrom so io.CopyBuffer does not call back into it.
type writerOnly struct{ io.Writer }

// captureBody passes the request body to the upstream unchanged while keeping its first max
// bytes for the meter.
type captureBody struct {
	io.ReadCloser
	buf       []byte
	max       int
	truncated bool
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
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

var (
	_ http.ResponseWriter = (*tapWriter)(nil)
	_ io.ReaderFrom       = (*tapWriter)(nil)
	_ http.Flusher        = (*tapWriter)(nil)
)
