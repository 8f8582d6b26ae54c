package llmtap

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/llmtap/llmtap/telemetry/expose"
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
	load       float64 // the handler's load (headroom.Target.Enter) when the request arrived
	// upgraded counts the bytes of a connection taken over after a 101 Switching Protocols
	// (a WebSocket); nil unless the connection was hijacked.
	upgraded *countedConn
	late     *expose.Late // the request's placeholders, filled when the response ends
	// timing is the request when the handler adds a Server-Timing trailer (server_timing),
	// else nil: the upstream's own llmtap entries are then taken out of the response's
	// Server-Timing header before it is sent (see ownTiming).
	timing *http.Request
	bufs   *sync.Pool // the Process's copy buffers (ReadFrom)
}

// ownTiming removes the upstream's Server-Timing entries named llmtap from the headers about
// to be sent with status code, when llmtap will add its own entry as a trailer (the rule of
// Handler.expose: not on a 101, only where expose.TrailerOK), so that the client never gets
// an upstream's entry beside llmtap's. Every other entry, and every other response, passes
// unchanged.
func (w *tapWriter) ownTiming(code int) {
	if w.timing == nil || code == http.StatusSwitchingProtocols {
		return
	}
	h := w.Header()
	if _, ok := h["Server-Timing"]; ok && expose.TrailerOK(w.timing, h) {
		expose.StripOwnTiming(h, "Server-Timing")
	}
}

// WriteHeader records the response headers' time and status, then sends them.
func (w *tapWriter) WriteHeader(code int) {
	if !w.wroteHeader && (code >= 200 || code == http.StatusSwitchingProtocols) {
		// Other 1xx responses (103 Early Hints) are informational: the real headers follow.
		// 101 is final: the connection then carries another protocol (see Hijack).
		w.wroteHeader = true
		w.ownTiming(code)
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
		w.ownTiming(http.StatusOK)
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
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
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

// Hijack hands the client's connection to the caller, as reverse_proxy asks after the upstream
// answered 101 Switching Protocols, and counts the bytes that then pass each way; endUpgrade
// gives them to the meter.
func (w *tapWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return conn, brw, err
	}
	// What the client sent after its request and the server had already read is in brw: the
	// caller forwards it from there.
	w.upgraded = &countedConn{Conn: conn}
	w.upgraded.in.Add(int64(brw.Reader.Buffered()))
	if _, ok := conn.(closeWriter); ok {
		return &halfClosable{w.upgraded}, brw, nil
	}
	return w.upgraded, brw, nil
}

// endUpgrade gives the meter what passed over a hijacked connection. It is called once the
// next handler returned, when reverse_proxy's copies of the connection have ended.
func (w *tapWriter) endUpgrade() {
	if w.upgraded != nil {
		w.m.Upgraded(w.upgraded.in.Load(), w.upgraded.out.Load())
	}
}

// Unwrap lets http.ResponseController reach the real writer for deadlines, hijacking and full
// duplex.
func (w *tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly hides ReadFrom so io.CopyBuffer does not call back into it.
type writerOnly struct{ io.Writer }

// countedConn counts the bytes read from and written to a connection; reverse_proxy copies
// each way on its own goroutine.
type countedConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

// closeWriter is a connection that can close its write half (TCP, TLS): reverse_proxy uses it
// to pass one side's end of a tunnel to the other while the other direction drains.
type closeWriter interface{ CloseWrite() error }

// halfClosable is a countedConn over a connection with CloseWrite, which it keeps.
type halfClosable struct{ *countedConn }

func (c *halfClosable) CloseWrite() error { return c.Conn.(closeWriter).CloseWrite() }

var (
	_ http.Hijacker       = (*tapWriter)(nil)
	_ http.ResponseWriter = (*tapWriter)(nil)
	_ io.ReaderFrom       = (*tapWriter)(nil)
	_ http.Flusher        = (*tapWriter)(nil)
)
