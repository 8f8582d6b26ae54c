package meter

import (
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// UpstreamTrace times the exchange with the upstream through the HTTP client's trace hooks
// (net/http/httptrace), which a reverse proxy's transport calls on the request's context (and
// composes with its own): when a connection was in hand and how long dialing and TLS took,
// when the request was written whole, when the first response byte came. The hooks run on the
// transport's goroutines, so the moments are atomics; they are offsets from t0 on the
// monotonic clock, 0 meaning "did not happen". It costs one allocation for the trace and its
// hooks and a context per request, nothing per response byte. The zero value is ready.
type UpstreamTrace struct {
	t0                        time.Time
	dialStart, tlsStart       atomic.Int64
	connect                   atomic.Int64 // dial and TLS time of new connections, summed
	gotConn, wrote, firstByte atomic.Int64
	hooks                     httptrace.ClientTrace
}

// since is the offset of now from t0, at least 1 so that it reads as "happened".
func (u *UpstreamTrace) since() int64 { return max(int64(time.Since(u.t0)), 1) }

// Request returns r with the trace hooks on its context, timing from t0.
func (u *UpstreamTrace) Request(r *http.Request, t0 time.Time) *http.Request {
	u.t0 = t0
	u.hooks = httptrace.ClientTrace{
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
	}
	return r.WithContext(httptrace.WithClientTrace(r.Context(), &u.hooks))
}

// Hand gives m what the hooks saw, before it finishes.
func (u *UpstreamTrace) Hand(m *Meter) {
	m.SetUpstream(Upstream{
		Connect:   time.Duration(u.connect.Load()),
		GotConn:   time.Duration(u.gotConn.Load()),
		Wrote:     time.Duration(u.wrote.Load()),
		FirstByte: time.Duration(u.firstByte.Load()),
	})
}
