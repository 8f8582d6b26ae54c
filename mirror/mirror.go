// Package mirror sends copies of a sample of live requests to a second upstream, fire and
// forget, and measures the copies with the same engine as the live requests (class mirror),
// so that the two servers' TTFT and ITL can be compared on the same requests.
//
// A Mirror never delays or fails the live request: the decision is a hash of a key no client
// can steer (a process-secret salt and a counter; or a header named in the options, see
// internal/sample), the copy starts only once the live request's body has been read in
// full (from the bytes the proxy already captured), it runs on its own goroutine with its own
// deadline, and when max_in_flight copies are already running a new one is skipped and
// counted, never queued. Its response is read to the end, measured and discarded.
//
// A Pairer matches the finalized records of a live request and of its copy (same request id,
// classes live and mirror) and summarizes the pairs per model.
//
// Close(ctx) stops a Mirror, bounded by ctx, as everything that drains in llmtap closes
// (internal/lifecycle).
package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/internal/sample"
	"github.com/llmtap/llmtap/internal/sensitive"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// MarkerHeader is set on every mirror request to the live request's id and a signature
// ("<id>;sig=<mac>", the MAC keyed with a secret of this process). A request that arrives with
// it is not mirrored again (skip reason "loop"), so a mirror upstream that leads back to the
// same proxy cannot multiply traffic — but only when the signature is this process's own, or
// Options.TrustMirrorOf says to honour any value: a client cannot opt its request out of the
// canary by sending the header.
const MarkerHeader = "X-Llmtap-Mirror-Of"

// Defaults of the Options.
const (
	DefaultSample      = 0.1
	DefaultMaxBody     = 1 << 20
	DefaultMaxInFlight = 64
	DefaultTimeout     = 60 * time.Second
)

// Measurer begins and ends the measurement of one request: the proxy's measurement engine
// (tap.Tap with the handler's meter pool), so that a mirror response is decoded and timed by
// the same code as the live one. Copies are sent through tap.Transport, the measuring
// http.RoundTripper load generators use too.
type Measurer = tap.Measurer

// Options configure a Mirror. Zero values mean the defaults.
type Options struct {
	// Upstream is the base URL copies are sent to: http:// or https://, a host, and an
	// optional path prefix put before the live request's path. Required.
	Upstream string
	// Sample is the fraction of live requests copied, in (0, 1]. Default 0.1.
	Sample float64
	// Seed changes which requests the sample chooses. Default 0.
	Seed uint64
	// SampleHeader, when set, names the request header whose value the sample is a hash of
	// (with Seed): a request id a trusted front sets, so that the same requests are copied on
	// every run. Whoever can set that header chooses whether a request is copied, so name only
	// a header clients cannot set. A request without it is sampled as by default. Default:
	// none: each request is sampled by a key of its own that no client can steer (a secret of
	// this process and a counter), whatever its X-Request-Id.
	SampleHeader string
	// TrustMirrorOf honours MarkerHeader whatever its value (the behaviour before the header
	// was signed): for proxies that mirror to one another, whose copies carry each other's
	// signatures. A client can then opt its own request out of mirroring. Default: false, only
	// a copy signed by this process is refused as a loop.
	TrustMirrorOf bool
	// MaxBody is the largest request body copied, in bytes. Default 1 MiB.
	MaxBody int
	// MaxInFlight is the most copies running at once. Default 64.
	MaxInFlight int
	// Timeout bounds one copy, from its start to the end of its response. Default 60s.
	Timeout time.Duration
	// HeaderUp sets headers on every copy (after the live headers are copied); an empty value
	// removes the header.
	HeaderUp map[string]string
	// ForwardSensitive names credential headers (see internal/sensitive) copied from the live
	// request; every other credential header is removed.
	ForwardSensitive []string
	// Transport sends the copies. Default: a transport of this Mirror's own, closed by Close.
	Transport http.RoundTripper

	// Measure measures the copies. Required.
	Measure Measurer
	// Stats receives the counts. Default: a Stats of this Mirror's own.
	Stats *Stats
	// Gate pauses mirroring. Default: never paused.
	Gate *Gate
	// Pairs is told the id of every copy sent, so it can pair the live and mirror records.
	// Default: no pairing.
	Pairs *Pairer
}

// Validate reports every invalid option at once.
func (o Options) Validate() error {
	var errs []error
	if err := CheckUpstream(o.Upstream); err != nil {
		errs = append(errs, err)
	}
	if o.Sample < 0 || o.Sample > 1 {
		errs = append(errs, fmt.Errorf("sample must be a fraction in (0, 1], got %v", o.Sample))
	}
	if o.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("max_body must not be negative, got %d", o.MaxBody))
	}
	if o.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max_in_flight must not be negative, got %d", o.MaxInFlight))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout must not be negative, got %v", o.Timeout))
	}
	for name := range o.HeaderUp {
		if err := CheckHeaderUp(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range o.ForwardSensitive {
		if err := CheckForwardSensitive(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckUpstream reports why s cannot be a mirror upstream, or nil.
func CheckUpstream(s string) error {
	_, err := parseUpstream(s)
	return err
}

// CheckHeaderUp reports why name cannot be set by header_up, or nil.
func CheckHeaderUp(name string) error {
	if name == "" || strings.ContainsAny(name, " :\r\n\t") {
		return fmt.Errorf("header_up: %q is not a header name", name)
	}
	if hopByHop(textproto.CanonicalMIMEHeaderKey(name)) {
		return fmt.Errorf("header_up: %s is a hop-by-hop header, which the mirror's own connection sets", name)
	}
	return nil
}

// CheckForwardSensitive reports why name cannot be in forward_sensitive, or nil.
func CheckForwardSensitive(name string) error {
	if !sensitive.Header(name) {
		return fmt.Errorf("forward_sensitive: %s is not a credential header; every other header is forwarded anyway", name)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Sample == 0 {
		o.Sample = DefaultSample
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Stats == nil {
		o.Stats = new(Stats)
	}
	if o.Gate == nil {
		o.Gate = new(Gate)
	}
	return o
}

// parseUpstream checks the upstream URL; a bare host:port means http.
func parseUpstream(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("the mirror upstream is required: a URL such as http://10.0.0.2:8000")
	}
	raw := s
	if !strings.Contains(s, "://") {
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("mirror upstream %q is not a URL: %v", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("mirror upstream %q: scheme must be http or https", s)
	case u.Host == "":
		return nil, fmt.Errorf("mirror upstream %q has no host", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("mirror upstream %q: only scheme, host, port and a path prefix are allowed", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Mirror copies sampled live requests to the upstream. Offer is safe for concurrent use.
type Mirror struct {
	opts      Options
	upstream  *url.URL
	coin      sample.Coin
	client    *http.Client
	own       *http.Transport // closed by Close when the transport is ours
	stats     *Stats
	sensitive map[string]bool // credential headers to forward, canonical

	ctx      context.Context
	cancel   context.CancelFunc
	inFlight atomic.Int64
	sampleH  string       // Options.SampleHeader, canonical
	mu       sync.RWMutex // guards closed against wg.Add
	closed   bool
	wg       sync.WaitGroup
}

// New validates o and returns a Mirror; Close stops it.
func New(o Options) (*Mirror, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Measure == nil {
		return nil, errors.New("mirror: no Measurer")
	}
	o = o.withDefaults()
	u, _ := parseUpstream(o.Upstream)
	m := &Mirror{opts: o, upstream: u, coin: sample.New(o.Sample, o.Seed), stats: o.Stats,
		sensitive: make(map[string]bool)}
	for _, h := range o.ForwardSensitive {
		m.sensitive[textproto.CanonicalMIMEHeaderKey(h)] = true
	}
	if o.SampleHeader != "" {
		m.sampleH = textproto.CanonicalMIMEHeaderKey(o.SampleHeader)
	}
	rt := o.Transport
	if rt == nil {
		m.own = &http.Transport{
			// Never through the environment's proxy: the mirror upstream is named in full.
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   o.MaxInFlight,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			// The copy carries the client's Accept-Encoding (or none); the meter decodes gzip
			// and br for measuring, as it does for the live response.
			DisableCompression: true,
		}
		rt = m.own
	}
	m.client = &http.Client{
		Transport: &tap.Transport{Base: rt, Measure: o.Measure},
		// A redirect is the mirror upstream's answer; following it would send the copy
		// somewhere nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Stats returns the counters this Mirror adds to.
func (m *Mirror) Stats() *Stats { return m.stats }

// Sampled reports whether a request whose sample key (see Options.SampleHeader) is key is
// chosen for mirroring.
func (m *Mirror) Sampled(key string) bool { return m.coin.Keep(key) }

// sampleKey is the key the sample of r is a hash of: the configured header's value, else a key
// of its own (secret.key).
func (m *Mirror) sampleKey(r *http.Request) string {
	if m.sampleH != "" {
		if v := r.Header.Get(m.sampleH); v != "" {
			return v
		}
	}
	return processSecret().key()
}

// loop reports whether r is a copy not to be mirrored again (MarkerHeader).
func (m *Mirror) loop(r *http.Request) bool {
	v := r.Header.Get(MarkerHeader)
	return v != "" && (m.opts.TrustMirrorOf || processSecret().verify(v))
}

// Request is a live request chosen for mirroring, waiting for its body. Exactly one of Send
// and Abandon takes effect; later calls do nothing.
type Request struct {
	m       *Mirror
	id      string
	method  string
	url     *url.URL
	path    string
	header  http.Header
	settled atomic.Bool
}

// Offer is called when a live request with id arrives, before its body is read. It returns
// nil when the request is not mirrored (not in the sample, a mirror copy itself, or declaring
// a body over max_body); otherwise the caller must call Send once the live body has been read
// in full, or Abandon when it never is. Offer does not read the body.
func (m *Mirror) Offer(r *http.Request, id string) *Request {
	if !m.coin.Keep(m.sampleKey(r)) {
		return nil
	}
	m.stats.sampled.Add(1)
	if m.loop(r) {
		m.stats.skip(SkipLoop)
		return nil
	}
	if r.ContentLength > int64(m.opts.MaxBody) {
		m.stats.skip(SkipBodyTooLarge)
		return nil
	}
	u := *m.upstream
	u.Path = m.upstream.Path + r.URL.Path
	if r.URL.RawPath != "" {
		u.RawPath = m.upstream.EscapedPath() + r.URL.RawPath
	}
	u.RawQuery, _ = sensitive.StripQuery(r.URL.RawQuery) // ?api_key=, ?key=, signed-URL parameters
	return &Request{m: m, id: id, method: r.Method, url: &u, path: r.URL.Path, header: m.headers(r.Header, id)}
}

// headers returns the headers of the copy: the live request's, without hop-by-hop and
// credential headers (except those forwarded on purpose), with the request id, the marker and
// header_up applied.
func (m *Mirror) headers(live http.Header, id string) http.Header {
	h := make(http.Header, len(live)+2)
	var connection []string
	for _, v := range live["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				connection = append(connection, textproto.CanonicalMIMEHeaderKey(f))
			}
		}
	}
	for name, vals := range live {
		switch {
		case hopByHop(name), name == "Host", name == "Content-Length", name == "Expect":
			continue
		case sensitive.Header(name) && !m.sensitive[name]:
			continue
		}
		skip := false
		for _, c := range connection {
			skip = skip || c == name
		}
		if !skip {
			h[name] = append([]string(nil), vals...)
		}
	}
	h.Set("X-Request-Id", id)
	h.Set(MarkerHeader, processSecret().sign(id))
	for name, v := range m.opts.HeaderUp {
		if v == "" {
			h.Del(name)
		} else {
			h.Set(name, v)
		}
	}
	return h
}

// hopByHop reports whether a canonical header name belongs to one connection (RFC 9110 7.6.1).
func hopByHop(name string) bool {
	switch name {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// Send starts the copy with body, the live request's body read in full (truncated: only its
// start was captured). It never blocks: the copy runs on its own goroutine, or is skipped and
// counted. body must not change afterwards.
func (q *Request) Send(body []byte, truncated bool) {
	if q == nil || !q.settled.CompareAndSwap(false, true) {
		return
	}
	m := q.m
	if truncated || len(body) > m.opts.MaxBody {
		m.stats.skip(SkipBodyTooLarge)
		return
	}
	if m.opts.Gate.Paused() {
		m.stats.skip(SkipPaused)
		return
	}
	if m.inFlight.Add(1) > int64(m.opts.MaxInFlight) {
		m.inFlight.Add(-1)
		m.stats.skip(SkipOverCap)
		return
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		m.inFlight.Add(-1)
		m.stats.skip(SkipStopped)
		return
	}
	m.wg.Add(1)
	m.mu.RUnlock()
	m.stats.sent.Add(1)
	m.stats.inFlight.Add(1)
	if m.opts.Pairs != nil {
		m.opts.Pairs.Expect(q.id)
	}
	go q.run(body)
}

// Abandon gives the request up: its body was never read in full (skip reason
// body_incomplete). It does nothing after Send.
func (q *Request) Abandon() {
	if q == nil || !q.settled.CompareAndSwap(false, true) {
		return
	}
	q.m.stats.skip(SkipBodyIncomplete)
}

// run sends the copy through the measuring transport, which times it, and reads its response
// to the end.
func (q *Request) run(body []byte) {
	m := q.m
	defer func() {
		m.inFlight.Add(-1)
		m.stats.inFlight.Add(-1)
		m.wg.Done()
	}()
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.Timeout)
	defer cancel()
	ended := false
	x := &tap.Exchange{ID: q.id, Class: record.ClassMirror, Body: body,
		Failure: func(err error, inBody bool) (string, string) {
			msg := "sending the mirror request: " + err.Error()
			switch {
			case m.ctx.Err() != nil: // llmtap, the copy's client, cancelled it
				return record.ErrCanceled, CutMessage
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				msg = fmt.Sprintf("the mirror request took longer than its timeout of %v", m.opts.Timeout)
			case inBody:
				msg = "reading the mirror response: " + err.Error()
			}
			return record.ErrUpstream, msg
		},
		Ended: func(status int, failure string) {
			ended = true
			switch {
			case failure != "" && m.ctx.Err() != nil:
				// Cut by this Mirror's Close (a config reload or shutdown), not the upstream's
				// doing: counted apart and never paired, so it cannot weigh on the verdict. This
				// runs before the record is submitted, so the Pairer forgets the id first.
				m.stats.cut.Add(1)
				if m.opts.Pairs != nil {
					m.opts.Pairs.Forget(q.id)
				}
			case failure != "" || status >= 400:
				m.stats.failed.Add(1)
			default:
				m.stats.completed.Add(1)
			}
		},
	}
	if err := q.exchange(tap.WithExchange(ctx, x), body); err != nil && !ended {
		m.stats.failed.Add(1) // the request could not be built: nothing was sent or measured
	}
}

// CutMessage is the error message of the record of a copy cut by Close.
const CutMessage = "cut: the mirror was stopped (config reload or shutdown) before the response completed"

// exchange sends the copy and reads its response to the end.
func (q *Request) exchange(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, q.method, q.url.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = q.header
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	if h := q.header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := q.m.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// Close stops the Mirror: copies still running are canceled (counted as cut, not failed; their
// records end with client_canceled and CutMessage, and are not paired), Close waits for their
// goroutines until ctx ends, and later Sends are skipped (reason stopped). It is idempotent.
func (m *Mirror) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	if err := lifecycle.Wait(ctx, &m.wg); err != nil {
		return err
	}
	if m.own != nil {
		m.own.CloseIdleConnections()
	}
	return nil
}
