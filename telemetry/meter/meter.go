// Package meter measures one HTTP exchange as it passes through a proxy: it is fed the request
// body as the upstream reads it, the response headers and every response write with the time it
// reached the proxy's writer, and it produces the per-request record of the metric contract (docs/metrics.md).
//
// A Meter does the minimum on the request path — framing events and classifying them, keeping a
// handful of timestamps — and leaves the expensive part (tokenizer counts, derived metrics) to
// Finalize, which the record pipeline runs off the request path.
package meter

import (
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/framing"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Options bound what a Meter holds. The zero value means the defaults.
type Options struct {
	// MaxEvent is the largest SSE event or NDJSON line decoded, in bytes (default 1 MiB). Larger
	// events are counted as oversized and skipped for decoding; their bytes still pass.
	MaxEvent int
	// MaxBody is the largest non-streaming response body kept for decoding (default 4 MiB).
	MaxBody int
	// MaxDecoded is the most bytes a gzip- or br-encoded response is decoded to for measuring
	// (default 64 MiB; a non-streaming body is decoded only as far as MaxBody). Past it the
	// meter stops decoding, the record says decode_stopped "size", and the rest of the body
	// passes to the client unmeasured. A decompression bomb is stopped sooner, by ratio (see
	// encoding.go).
	MaxDecoded int64
	// MaxRequestBody is how much of the request body is kept for reading the model, the
	// stream flags and the prompt (default 1 MiB). The body itself always passes in full.
	MaxRequestBody int
	// MaxInterChunk caps the inter-chunk gaps kept per request (default 16384); further gaps
	// are counted in the record's inter_chunk_dropped.
	MaxInterChunk int
	// API forces the response decoder ("openai.chat", …) instead of choosing it from the
	// request path. Empty means chosen per request.
	API string
}

func (o Options) withDefaults() Options {
	if o.MaxEvent <= 0 {
		o.MaxEvent = framing.DefaultMaxEvent
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 4 << 20
	}
	if o.MaxDecoded <= 0 {
		o.MaxDecoded = 64 << 20
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 1 << 20
	}
	if o.MaxInterChunk <= 0 {
		o.MaxInterChunk = 16384
	}
	return o
}

// mode is how the response body is taken apart.
type mode uint8

const (
	modeNone   mode = iota // headers not seen yet
	modeSSE                // text/event-stream
	modeNDJSON             // application/x-ndjson, application/jsonl
	modeBody               // a complete body, decoded at the end
)

// Meter measures one exchange. Get one from a Pool; it is not safe for concurrent use.
type Meter struct {
	opts Options
	pool *Pool
	t0   time.Time

	rec record.Record

	api     string
	dec     decode.ResponseDecoder
	mode    mode
	sse     *framing.SSE
	ndjson  *framing.NDJSON
	framer  framing.Framer
	onEvent func(*framing.Event)
	// inflate decodes a gzip- or br-encoded body for measuring (see encoding.go); nil for an
	// unencoded one. onDecoded is its output, m.consume, allocated once per pooled meter.
	inflate      *inflater
	onDecoded    func([]byte, int64)
	inflateFails int
	decoded      int64  // bytes the encoded body decoded to (measured)
	decodeStop   string // which bound stopped decoding early, if one did

	reqBody []byte

	body          []byte
	bodyTruncated bool

	headersAt     int64
	firstContent  int64
	firstOutput   int64
	secondContent int64
	lastContent   int64
	events        int
	contentEvents int
	oversized     int
	sawDone       bool
	streamErr     bool
	bytes         int64
	gaps          []float64
	gapsDropped   int

	// up is the upstream exchange's moments (SetUpstream), hdrTimings the timings a server
	// sent in its headers (TGI's /generate): split.go.
	up         Upstream
	hdrTimings decode.ServerTimings
}

// Pool reuses Meters and their buffers between requests.
type Pool struct {
	opts Options
	p    sync.Pool
}

// NewPool returns a pool of meters with the given options.
func NewPool(opts Options) *Pool {
	pl := &Pool{opts: opts.withDefaults()}
	pl.p.New = func() any {
		m := &Meter{opts: pl.opts, pool: pl}
		m.onEvent = m.event
		m.onDecoded = m.consume
		m.sse = framing.NewSSE(pl.opts.MaxEvent, m.onEvent)
		m.ndjson = framing.NewNDJSON(pl.opts.MaxEvent, m.onEvent)
		return m
	}
	return pl
}

// Get returns a meter started at t0 for a request to path.
func (pl *Pool) Get(t0 time.Time, path string) *Meter {
	m := pl.p.Get().(*Meter)
	m.start(t0, path)
	return m
}

// Release returns a finished meter to its pool. The record returned by Finish stays valid; the
// meter must not be used again.
func (m *Meter) Release() {
	m.endInflate()
	decode.Put(m.dec)
	m.dec = nil
	m.pool.put(m)
}

func (pl *Pool) put(m *Meter) {
	if cap(m.body) > pl.opts.MaxBody || cap(m.gaps) > 4096 {
		// Do not keep rare huge buffers alive in the pool.
		m.body, m.gaps = nil, nil
	}
	pl.p.Put(m)
}

// Now is the time to hand Write and Headers: t0 advanced by the monotonic time elapsed since
// it. It reads one clock where time.Now reads two (the wall and the monotonic clock), and every
// duration the meter computes is taken on the monotonic clock, so the measurements are the
// same; its wall-clock part is t0's plus the elapsed time, unaffected by a clock step mid-request.
func (m *Meter) Now() time.Time { return m.t0.Add(time.Since(m.t0)) }

func (m *Meter) start(t0 time.Time, path string) {
	m.t0 = t0
	m.rec = record.Record{Start: t0, Path: path, Class: record.ClassLive, UsageOutputTokens: -1}
	m.api = m.opts.API
	if m.api == "" {
		m.api = decode.APIForPath(path)
	}
	m.dec = decode.Get(m.api)
	m.mode = modeNone
	m.framer = nil
	m.inflate, m.inflateFails = nil, 0
	m.decoded, m.decodeStop = 0, ""
	m.sse.Reset()
	m.ndjson.Reset()
	m.reqBody = nil
	m.body = m.body[:0]
	m.bodyTruncated = false
	m.headersAt = -1
	m.firstContent, m.firstOutput, m.secondContent, m.lastContent = -1, -1, -1, -1
	m.events, m.contentEvents, m.oversized = 0, 0, 0
	m.sawDone, m.streamErr = false, false
	m.bytes = 0
	m.gaps = m.gaps[:0]
	m.gapsDropped = 0
	m.up, m.hdrTimings = Upstream{}, decode.ServerTimings{}
}

// Record gives access to the record being built, for the caller to set the request id, the
// class and anything else it knows.
func (m *Meter) Record() *record.Record { return &m.rec }

// RequestBody hands the meter the captured beginning of the request body (at most
// Options.MaxRequestBody bytes; truncated reports that more followed). The meter keeps the
// slice: the caller must not reuse it.
func (m *Meter) RequestBody(b []byte, truncated bool) {
	m.reqBody = b
	_ = truncated // the request decoder detects a cut body by itself
}

// MaxRequestBody is the capture limit the caller should apply to the request body.
func (m *Meter) MaxRequestBody() int { return m.opts.MaxRequestBody }

// Headers records the response status and headers, written at time at.
func (m *Meter) Headers(status int, h http.Header, at time.Time) {
	if m.mode != modeNone {
		return
	}
	m.headersAt = int64(at.Sub(m.t0))
	m.rec.Status = status
	m.mode = modeBody
	ct := h.Get("Content-Type")
	if ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			ct = mt
		} else {
			ct = strings.ToLower(strings.TrimSpace(ct))
		}
	}
	switch ct {
	case "text/event-stream":
		m.mode, m.framer = modeSSE, m.sse
	case "application/x-ndjson", "application/jsonl", "application/ndjson", "application/json-seq":
		m.mode, m.framer = modeNDJSON, m.ndjson
	}
	if m.framer != nil {
		m.rec.Stream = true
	}
	if coding := encodingOf(h.Get("Content-Encoding")); coding != "" {
		// The client gets the encoded bytes; the meter measures what they decode to.
		limit := m.opts.MaxDecoded
		if m.mode == modeBody {
			// Only MaxBody bytes of a complete body are kept: one more tells it was longer.
			limit = min(limit, int64(m.opts.MaxBody)+1)
		}
		m.inflate = newInflater(coding, limit, m.onDecoded)
	}
	if m.opts.API == "" {
		// The path chose a decoder before the response existed; the content type can refine
		// it (an NDJSON stream on an OpenAI path, SSE on an Ollama path is timed only).
		if api := decode.APIForResponse(m.rec.Path, ct); api != m.api {
			decode.Put(m.dec)
			m.api, m.dec = api, decode.Get(api)
		}
	}
	if m.api == decode.APITGIGenerate {
		m.hdrTimings, _ = decode.TGIHeaderTimings(h)
	}
}

// Write feeds the bytes the proxy wrote to the client at time at.
func (m *Meter) Write(p []byte, at time.Time) {
	if m.mode == modeNone {
		m.Headers(http.StatusOK, http.Header{}, at)
	}
	m.bytes += int64(len(p))
	if m.inflate != nil {
		m.inflate.write(p, int64(at.Sub(m.t0)))
		return
	}
	m.consume(p, int64(at.Sub(m.t0)))
}

// Upgraded records what passed over the connection after a 101 Switching Protocols response
// (a WebSocket): in bytes from the client, out bytes to it. Call it before Finish.
func (m *Meter) Upgraded(in, out int64) {
	m.rec.BytesFromClient = in
	m.bytes = out
}

// consume measures body bytes as they read unencoded, at time at (from t0).
func (m *Meter) consume(p []byte, at int64) {
	switch m.mode {
	case modeSSE, modeNDJSON:
		m.framer.Write(p, at)
	case modeBody:
		room := m.opts.MaxBody - len(m.body)
		if len(p) > room {
			p = p[:max(room, 0)]
			m.bodyTruncated = true
		}
		m.body = append(m.body, p...)
	}
}

// event is the framer callback: it classifies one event and keeps its time.
func (m *Meter) event(ev *framing.Event) {
	m.events++
	if ev.Oversized {
		m.oversized++
		return
	}
	switch m.dec.Event(ev.Type, ev.Data) {
	case decode.Content:
		m.content(ev.At, true)
	case decode.Reasoning:
		m.content(ev.At, false)
	case decode.Done:
		m.sawDone = true
	case decode.Error:
		m.streamErr = true
	}
}

func (m *Meter) content(at int64, output bool) {
	m.contentEvents++
	switch {
	case m.firstContent < 0:
		m.firstContent = at
	case m.secondContent < 0:
		m.secondContent = at
	}
	if output && m.firstOutput < 0 {
		m.firstOutput = at
	}
	if m.lastContent >= 0 {
		if len(m.gaps) < m.opts.MaxInterChunk {
			m.gaps = append(m.gaps, record.Ms(time.Duration(at-m.lastContent)))
		} else {
			m.gapsDropped++
		}
	}
	m.lastContent = at
}
