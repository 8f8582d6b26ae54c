package mirror

import (
	"io"
	"net/http"

	"github.com/llmtap/llmtap/telemetry/capture"
)

// OfferBody offers the live request r (id) to the mirror and arranges for the copy to start
// once its body has been read in full: at once when there is no body or it was already read
// whole, otherwise when the upstream's reads reach its end (r.Body is wrapped for that). body
// is the capture of r's body (nil: none). The caller must call Abandon on the result when the
// exchange is over (it does nothing once the copy started). Nil-safe: a nil Mirror copies
// nothing.
func (m *Mirror) OfferBody(r *http.Request, id string, body *capture.Body) *Request {
	if m == nil {
		return nil
	}
	q := m.Offer(r, id)
	switch {
	case q == nil:
	case body == nil:
		q.Send(nil, false)
	case body.ReadCloser == nil: // a body read in full before (inject_usage)
		q.Send(body.Peek())
	default:
		r.Body = &bodyEnd{ReadCloser: r.Body, body: body, length: r.ContentLength, q: q}
	}
	return q
}

// bodyEnd starts the copy when the request body has been read to its end: io.EOF, or as many
// bytes as its Content-Length (a reader may stop there without asking for EOF).
type bodyEnd struct {
	io.ReadCloser
	body   *capture.Body
	length int64
	read   int64
	q      *Request
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF || (b.length > 0 && b.read >= b.length) {
		b.q.Send(b.body.Peek())
	}
	return n, err
}
