package commands

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// sendInfo is what the measuring transport needs to know about one request; the request
// builder puts it in the request's context.
type sendInfo struct {
	n        int
	id       string
	session  string
	body     []byte
	intended time.Time // the schedule's time for the request (monotonic)
	// cancelAfter, when positive or cancel is set, cancels the request that long after it was
	// fully written (AIPerf's --request-cancellation-delay).
	cancel      bool
	cancelAfter time.Duration
	canceled    atomic.Bool // the cancellation fired
}

type sendInfoKey struct{}

func withSendInfo(ctx context.Context, si *sendInfo) context.Context {
	return context.WithValue(ctx, sendInfoKey{}, si)
}

// measuringTransport measures every response with the same engine the proxy uses: a meter
// started just before the request is written, fed each read of the body as the client
// receives it, and ended at the end of the body. It is what a client-side benchmark sees.
type measuringTransport struct {
	base  http.RoundTripper
	tap   *tap.Tap
	class string
}

func (t *measuringTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	si, _ := req.Context().Value(sendInfoKey{}).(*sendInfo)
	if si == nil {
		return t.base.RoundTrip(req)
	}
	stop := func() {}
	if si.cancel {
		ctx, cancel := context.WithCancel(req.Context())
		var timer *time.Timer
		var mu sync.Mutex
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) {
				mu.Lock()
				defer mu.Unlock()
				if timer == nil {
					timer = time.AfterFunc(si.cancelAfter, func() { si.canceled.Store(true); cancel() })
				}
			},
		})
		stop = func() {
			mu.Lock()
			if timer != nil {
				timer.Stop()
			}
			mu.Unlock()
			cancel()
		}
		req = req.WithContext(ctx)
	}
	m := t.tap.Begin(time.Now(), req.URL.Path)
	rec := m.Record()
	rec.RequestID, rec.Class = si.id, t.class
	m.RequestBody(si.body, false)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.tap.End(m, time.Now(), failureOf(si), err.Error())
		stop()
		return nil, err
	}
	m.Headers(resp.StatusCode, resp.Header, time.Now())
	resp.Body = &meteredBody{rc: resp.Body, m: m, tap: t.tap, si: si, stop: stop}
	return resp, nil
}

// failureOf names why a request failed: cancelled on purpose, or the exchange broke.
func failureOf(si *sendInfo) string {
	if si.canceled.Load() {
		return record.ErrCanceled
	}
	return record.ErrUpstream
}

// meteredBody feeds every read to the meter and ends the measurement at the end of the body,
// when reading fails, or when the body is closed early, whichever comes first. Reads and Close
// come from the one goroutine reading the response.
type meteredBody struct {
	rc   io.ReadCloser
	m    *meter.Meter
	tap  *tap.Tap
	si   *sendInfo
	stop func()
	done bool
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.done {
		return n, err
	}
	now := time.Now()
	if n > 0 {
		b.m.Write(p[:n], now)
	}
	switch {
	case err == io.EOF:
		b.end(now, "", "")
	case err != nil:
		b.end(now, failureOf(b.si), err.Error())
	}
	return n, err
}

func (b *meteredBody) Close() error {
	if !b.done {
		b.end(time.Now(), record.ErrCanceled, "response closed before its end")
	}
	err := b.rc.Close()
	b.stop()
	return err
}

func (b *meteredBody) end(at time.Time, failure, msg string) {
	b.done = true
	b.tap.End(b.m, at, failure, msg)
	b.m = nil
}
