package llmtap

import (
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
)

// upstreamTrace times the exchange with the upstream through the HTTP client's trace hooks
// (net/http/httptrace), which reverse_proxy's transport calls on the request's context (and
// composes with its own): when a connection was in hand and how long dialing and TLS took,
// when the request was written whole, when the first response byte came. The hooks run on the
// transport's goroutines, so the moments are atomics; they are offsets from t0 on the
// monotonic clock, 0 meaning "did not happen". It costs one small allocation and a context
// per request, nothing per response byte.
type upstreamTrace struct {
	t0                        time.Time
	dialStart, tlsStart       atomic.Int64
	connect                   atomic.Int64 // dial and TLS time of new connections, summed
	gotConn, wrote, firstByte atomic.Int64
}

// since is the offset of now from t0, at least 1 so that it reads as "happened".
func (u *upstreamTrace) since() int64 { return max(int64(time.Since(u.t0)), 1) }

// request returns r with the trace hooks on its context.
func (u *upstreamTrace) request(r *http.Request, t0 time.Time) *http.Request {
	u.t0 = t0
	return r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		ConnectStart: func(string, string) { u.dialStart.Store(u.since()) },
		ConnectDone: func(string, string, error) {
			if s := u.dialStart.Load(); s > 0 {
				u.connect.Add(u.since() - s)
			}
		},
		TLSHandshakeStart: func() { u.tlsStart.Store(u.since()) },
		TLSHandshakeDone: func(tls.ConnectionState, error) {
			if s := u.tlsStart.Load(); s > 0 {
				u.connect.Add(u.since() - s)
			}
		},
		GotConn:              func(httptrace.GotConnInfo) { u.gotConn.Store(u.since()) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { u.wrote.Store(u.since()) },
		GotFirstResponseByte: func() { u.firstByte.Store(u.since()) },
	}))
}

// hand gives the meter what the hooks saw, before it finishes.
func (u *upstreamTrace) hand(m *meter.Meter) {
	m.SetUpstream(meter.Upstream{
		Connect:   time.Duration(u.connect.Load()),
		GotConn:   time.Duration(u.gotConn.Load()),
		Wrote:     time.Duration(u.wrote.Load()),
		FirstByte: time.Duration(u.firstByte.Load()),
	})
}
