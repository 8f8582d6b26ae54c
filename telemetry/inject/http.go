package inject

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Request applies usage injection to one request whose API is api (decode.API*): when r is a
// streaming OpenAI chat request that does not ask for usage, it rewrites the body to ask (see
// AddIncludeUsage) and returns a writer that removes the usage-only chunk from the response on
// its way to the client, with maxEvent the largest event the filter holds. The measuring
// writer goes on top of the returned writer, so the meter still reads the chunk. end must be
// called once the response is complete: it writes what the filter holds of an event cut
// short. Otherwise w is returned unchanged; original is the body as the client sent it when
// it was rewritten.
//
// The body is read here, before the upstream is dialled, at most limit+1 bytes of it; a body
// over limit, or one that fails to read, is passed on exactly as it came (the bytes read,
// then the rest or the read error).
//
// The filter reads plain SSE, and the body is rewritten before the response, and its coding,
// exists. So an injected request whose client accepts a compressed response is sent with
// Accept-Encoding: identity (the client accepts identity too: the response is one it can
// read, the same content, only not compressed); one whose client refuses identity is not
// injected. rec.UsageInjection says which.
func Request(w http.ResponseWriter, r *http.Request, api string, limit, maxEvent int, rec *record.Record) (_ http.ResponseWriter, end func(), original []byte) {
	noop := func() {}
	if api != decode.APIOpenAIChat || r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody || r.ContentLength > int64(limit) {
		return w, noop, nil
	}
	orig := r.Body
	body, err := io.ReadAll(io.LimitReader(orig, int64(limit)+1))
	if err != nil || len(body) > limit {
		rest := io.Reader(orig)
		if err != nil {
			rest = errReader{err}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), orig}
		return w, noop, nil
	}
	out, res := AddIncludeUsage(body)
	how := record.UsageInjected
	if res == Injected {
		switch acc := AcceptEncoding(r.Header.Values("Accept-Encoding")); {
		case !acc.Compressed: // the response comes in identity
		case acc.Identity:
			how = record.UsageInjectedIdentity
		default:
			res, out, rec.UsageInjection = Declined, body, record.UsageSkippedCompressed
		}
	}
	r.Body = readCloser{bytes.NewReader(out), orig}
	if res != Injected {
		return w, noop, nil
	}
	rec.UsageInjection = how
	if how == record.UsageInjectedIdentity {
		r.Header.Set("Accept-Encoding", "identity")
	}
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	r.TransferEncoding = nil
	fw := &usageFilterWriter{ResponseWriter: w, max: maxEvent, rec: rec}
	return fw, fw.end, body
}

// usageFilterWriter removes usage-only chunks from a successful SSE response; any other
// response (an error body, JSON, a content-coded stream) passes untouched.
type usageFilterWriter struct {
	http.ResponseWriter
	max     int
	rec     *record.Record
	decided bool
	f       *Filter
}

// WriteHeader installs the filter when the response is a 2xx event stream in no content
// coding. A coded one is passed as it comes, never held: the client accepts no compression,
// so only a server that ignores Accept-Encoding sends one, and the record says so.
func (w *usageFilterWriter) WriteHeader(code int) {
	if !w.decided && code >= 200 {
		w.decided = true
		if code < 300 && isEventStream(w.Header().Get("Content-Type")) {
			if ce := w.Header().Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
				w.rec.UsageInjection = record.UsageUnfilteredEncoded
				w.ResponseWriter.WriteHeader(code)
				return
			}
			w.f = NewFilter(writerOnly{w.ResponseWriter}, w.max)
			if w.Header().Get("Content-Length") != "" {
				// The response keeps its framing: the usage chunk becomes a comment of its
				// length, which an SSE client skips.
				w.f.KeepLength()
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write passes p through the filter when there is one.
func (w *usageFilterWriter) Write(p []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.f != nil {
		return w.f.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the client's writer.
func (w *usageFilterWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for callers that use http.Flusher.
func (w *usageFilterWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the real writer.
func (w *usageFilterWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// end writes what the filter holds of an incomplete event and flushes it: on a stream the
// upstream cut, reverse_proxy aborts the response (it panics with http.ErrAbortHandler, and
// end runs while that unwinds), and the server then closes the connection without flushing
// what was buffered; plain reverse_proxy had flushed those bytes as they came.
func (w *usageFilterWriter) end() {
	if w.f != nil && w.f.Held() > 0 {
		// A client that is gone was already recorded by the measuring writer.
		if w.f.Close() == nil {
			_ = w.FlushError()
		}
	}
}

func isEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// readCloser reads from one reader and closes another (the original body).
type readCloser struct {
	io.Reader
	io.Closer
}

// writerOnly hides ReadFrom so the filter's writes go through Write.
type writerOnly struct{ io.Writer }

// errReader returns err on every read: a body that failed to read while being inspected
// fails the same way for the upstream.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

var (
	_ http.ResponseWriter = (*usageFilterWriter)(nil)
	_ http.Flusher        = (*usageFilterWriter)(nil)
)
