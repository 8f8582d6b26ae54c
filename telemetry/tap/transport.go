package tap

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Measurer begins and ends the measurement of one request: a *Tap, or a Tap with a meter pool
// of its own (WithPool), so that every client of the engine decodes and times a response with
// the same code as the proxy.
type Measurer interface {
	Begin(t0 time.Time, path string) *meter.Meter
	End(m *meter.Meter, end time.Time, failure, msg string) *record.Record
}

// WithPool returns a Measurer that takes its meters from pool (a handler's own meter options)
// and submits its records on rt (the handler's route: its recorder writes them, its tokenizer
// counts them; nil for none).
func (t *Tap) WithPool(pool *meter.Pool, rt *pipeline.Route) Measurer { return pooled{t, pool, rt} }

type pooled struct {
	t     *Tap
	pool  *meter.Pool
	route *pipeline.Route
}

func (p pooled) Begin(t0 time.Time, path string) *meter.Meter { return p.t.BeginWith(p.pool, t0, path) }

func (p pooled) End(m *meter.Meter, end time.Time, failure, msg string) *record.Record {
	r := p.t.Finish(m, end, failure, msg)
	p.t.Submit(pipeline.Routed{Record: r, Route: p.route})
	return r
}

// Exchange is what Transport needs to know about one request that the request itself does not
// say. Put it in the request's context with WithExchange; a request without one is sent
// unmeasured.
type Exchange struct {
	// ID and Class are the record's request id and traffic class.
	ID, Class string
	// Body is the request body as sent: the meter reads the model, the prompt and the options
	// from it.
	Body []byte
	// Canceled, when set and true by the time the exchange breaks, says the client cancelled
	// it on purpose: the failure is record.ErrCanceled rather than record.ErrUpstream.
	Canceled *atomic.Bool
	// Failure names the failure class and message of an exchange that broke with err, before
	// any response (inBody false) or while its body was read. Nil: the class Canceled says
	// and err's text.
	Failure func(err error, inBody bool) (class, msg string)
	// Ended, when set, is told once that the measurement ended: the response's status (0 when
	// none came) and the failure class ("" for a response read to its end). It runs on the
	// goroutine that ended it, before the record is submitted.
	Ended func(status int, failure string)
	// Closed, when set, runs once when the exchange is over: the response body closed, or the
	// round trip failed.
	Closed func()
}

type exchangeKey struct{}

// WithExchange returns ctx carrying x, for a request sent through a Transport.
func WithExchange(ctx context.Context, x *Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// Transport is an http.RoundTripper that measures every response with the engine, the way the
// proxy measures a live one: a meter started just before the request is written, fed each read
// of the body as the client receives it, and ended at the end of the body, when a read fails or
// when the body is closed early (record.ErrCanceled, "response closed before its end"),
// whichever comes first. It is what a client sees. Reads and Close of one body must come from
// one goroutine, as http.Response requires anyway. Load generators (load/bench) and the mirror
// (mirror) send through it.
type Transport struct {
	// Base sends the requests. Required.
	Base http.RoundTripper
	// Measure measures them. Required.
	Measure Measurer
}

// RoundTrip sends req through Base, measuring it when its context carries an Exchange.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if x == nil {
		return t.Base.RoundTrip(req)
	}
	m := t.Measure.Begin(time.Now(), req.URL.Path)
	rec := m.Record()
	rec.RequestID, rec.Class = x.ID, x.Class
	m.RequestBody(x.Body, false)
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		class, msg := x.failure(err, false)
		x.end(t.Measure, m, 0, time.Now(), class, msg)
		if x.Closed != nil {
			x.Closed()
		}
		return nil, err
	}
	m.Headers(resp.StatusCode, resp.Header, time.Now())
	resp.Body = &meteredBody{rc: resp.Body, m: m, measure: t.Measure, x: x, status: resp.StatusCode}
	return resp, nil
}

func (x *Exchange) failure(err error, inBody bool) (string, string) {
	switch {
	case x.Failure != nil:
		return x.Failure(err, inBody)
	case x.Canceled != nil && x.Canceled.Load():
		return record.ErrCanceled, err.Error()
	}
	return record.ErrUpstream, err.Error()
}

func (x *Exchange) end(measure Measurer, m *meter.Meter, status int, at time.Time, failure, msg string) {
	if x.Ended != nil {
		x.Ended(status, failure)
	}
	measure.End(m, at, failure, msg)
}

// meteredBody feeds every read to the meter and ends the measurement once.
type meteredBody struct {
	rc      io.ReadCloser
	m       *meter.Meter
	measure Measurer
	x       *Exchange
	status  int
	done    bool
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
		class, msg := b.x.failure(err, true)
		b.end(now, class, msg)
	}
	return n, err
}

func (b *meteredBody) Close() error {
	if !b.done {
		b.end(time.Now(), record.ErrCanceled, "response closed before its end")
	}
	err := b.rc.Close()
	if b.x.Closed != nil {
		b.x.Closed()
		b.x.Closed = nil
	}
	return err
}

func (b *meteredBody) end(at time.Time, failure, msg string) {
	b.done = true
	b.x.end(b.measure, b.m, b.status, at, failure, msg)
	b.m = nil
}
