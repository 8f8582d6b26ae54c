package mock

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// maxBodyBytes bounds a request body; larger bodies get HTTP 413.
const maxBodyBytes = 64 << 20

// maxPooledBytes is the largest buffer a responder keeps between requests,
// so that one huge prompt does not pin its memory forever.
const maxPooledBytes = 1 << 20

// responder holds the state of one generation request. Responders are
// pooled: a stream of small events then allocates nothing per event.
type responder struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	arrived time.Time
	// started is when generation began: arrived, or when a slot came free
	// after a wait (Config.Slots). Token offsets count from it.
	started time.Time
	// firstAt and lastAt are the times taken just before the first and the
	// last content writes; reported is the split derived from them, once
	// computed (see timings.go).
	firstAt, lastAt time.Time
	reported        split
	finished        bool   // the response was written whole: observed in /metrics
	text            []byte // TGI: the generated text, for generated_text

	body  bytes.Buffer // request body
	buf   []byte       // the event or body being written
	head  []byte       // the per-response start of every chunk
	pcg   rand.PCG
	rng   *rand.Rand // draws from pcg
	plan  plan
	sched schedule
	timer *time.Timer

	ep        endpoint // the route being answered, for the error body's shape
	tracing   bool
	trace     Trace
	committed bool  // the trace is stored; nothing more is recorded
	gone      bool  // the client left or a write failed
	kv        int64 // KV-cache tokens this request holds (Config.KVCacheTokens)

	// Counters added to the server's once, at the end.
	tokens, reasoning, events int64
}

func newResponder(s *Server) *responder {
	r := &responder{s: s}
	r.rng = rand.New(&r.pcg)
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	return r
}

// generate answers POST /v1/chat/completions and /v1/completions.
func (s *Server) generate(w http.ResponseWriter, hr *http.Request, ep endpoint, arrived time.Time) {
	seq := s.seq.Add(1) - 1
	s.requests.Add(1)
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.recordArrival(arrived)

	id := hr.Header.Get("X-Request-Id")
	if id == "" {
		id = "mock-" + strconv.FormatUint(seq, 10)
	}
	w.Header().Set("X-Request-Id", id)

	r := s.pool.Get().(*responder)
	r.w, r.rc, r.ctx, r.arrived = w, http.NewResponseController(w), hr.Context(), arrived
	r.started, r.firstAt, r.lastAt, r.reported, r.finished = arrived, time.Time{}, time.Time{}, split{}, false
	r.tracing, r.committed, r.gone = s.tracing, false, false
	r.tokens, r.reasoning, r.events = 0, 0, 0
	if r.tracing {
		r.trace = Trace{RequestID: id, Path: hr.URL.Path, Proto: hr.Proto, Arrived: arrived}
	}
	r.pcg.Seed(uint64(s.cfg.Seed), seq)

	r.serve(hr, ep, id)

	if r.finished && !r.gone {
		s.metrics.observe(r.split())
	}
	s.tokens.Add(r.tokens)
	s.events.Add(r.events)
	if r.gone {
		s.canceled.Add(1)
	}
	if r.tracing {
		r.trace.CompletionTokens, r.trace.ReasoningTokens = int(r.tokens), int(r.reasoning)
		r.trace.Canceled = r.gone
		if !r.committed {
			s.commit(&r.trace)
		}
		s.logTrace(&r.trace)
		r.trace = Trace{}
	}
	r.w, r.rc, r.ctx = nil, nil, nil
	if r.body.Cap() > maxPooledBytes {
		r.body = bytes.Buffer{}
	}
	if cap(r.buf) > maxPooledBytes {
		r.buf = nil
	}
	if cap(r.text) > maxPooledBytes {
		r.text = nil
	}
	s.pool.Put(r)
}

// serve reads, checks and answers one request.
func (r *responder) serve(hr *http.Request, ep endpoint, id string) {
	s, cfg := r.s, &r.s.cfg
	r.ep = ep
	r.body.Reset()
	if _, err := r.body.ReadFrom(http.MaxBytesReader(r.w, hr.Body, maxBodyBytes)); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			r.fail(http.StatusRequestEntityTooLarge, "invalid_request_error", "request body over 64 MiB")
			return
		}
		r.fail(http.StatusBadRequest, "invalid_request_error", "reading body: "+err.Error())
		return
	}
	req, err := parseRequest(r.body.Bytes(), ep)
	var lim limits
	if err == nil {
		lim, err = req.limits(cfg)
	}
	if ep == messagesEndpoint || ep.native() {
		lim.n = 1 // the Messages API and the native APIs have no n
	}
	prompt := 0
	if err == nil {
		prompt, err = req.promptTokens(ep, cfg.PromptCounter)
	}
	if err != nil {
		r.fail(http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if r.tracing {
		r.trace.Stream, r.trace.PromptTokens = req.Stream, prompt
	}
	makePlan(&r.plan, cfg, lim, ep, req.Stream, r.rng)
	if r.tracing && req.Stream {
		// headers, role, one event per token (an upper bound), finish,
		// usage, done: one allocation for the whole trace.
		est := 3 + len(r.plan.choices)*(r.plan.maxTokens+2)
		r.trace.Events = make([]EventTime, 0, min(est, maxTraceEvents))
	}
	if r.plan.fail {
		s.errs.Add(1)
		r.fail(http.StatusInternalServerError, "server_error", "mockllm: injected error (error rate "+strconv.FormatFloat(cfg.ErrorRate, 'g', -1, 64)+")")
		return
	}
	model := req.Model
	if model == "" {
		model = cfg.Model
	}
	if !r.acquire() {
		return
	}
	defer r.release()
	r.holdKV(prompt)
	r.sched.reset(cfg, r.rng)
	switch {
	case ep == ollamaChatEndpoint || ep == ollamaGenerateEndpoint:
		if req.Stream {
			s.streams.Add(1)
		}
		r.ollama(ep, model, prompt, req.Stream)
		return
	case ep == tgiStreamEndpoint:
		s.streams.Add(1)
		r.tgiStream(model, prompt, req.details)
		return
	case ep == tgiEndpoint:
		r.tgiUnary(model, prompt, req.details)
		return
	case req.Stream && ep == messagesEndpoint:
		s.streams.Add(1)
		r.messagesStream(id, model, prompt)
		return
	case req.Stream:
		s.streams.Add(1)
		r.stream(ep, id, model, prompt, req.includeUsage(cfg.Usage))
		return
	case ep == messagesEndpoint:
		r.messagesUnary(id, model, prompt)
		return
	}
	r.unary(ep, id, model, prompt, cfg.Usage != UsageNever)
}

// fail answers with an error status and an OpenAI error body.
func (r *responder) fail(status int, typ, message string) {
	if status < 500 {
		r.s.badRequests.Add(1)
	}
	if r.tracing {
		r.trace.Status = status
		r.mark(KindError, 0, 0, r.arrived)
		r.commit()
	}
	if r.ep == messagesEndpoint {
		r.w.Header().Set("Content-Type", "application/json")
		r.w.WriteHeader(status)
		r.w.Write(appendAnthropicError(nil, anthropicErrorType(status), message))
		return
	}
	writeError(r.w, status, typ, message)
}

// unary answers a non-streaming request once the last token is due.
func (r *responder) unary(ep endpoint, id, model string, prompt int, usage bool) {
	at := r.waitLast()
	if at.IsZero() {
		return
	}
	b := appendHead(r.buf[:0], ep, false, id, r.arrived.Unix(), model)
	completion, reasoning := 0, 0
	for c, cp := range r.plan.choices {
		if c > 0 {
			b = append(b, ',')
		}
		b = appendIndex(b, c)
		if ep == chatEndpoint {
			b = append(b, `"message":{"role":"assistant","content":"`...)
			b = appendWords(b, cp.tokens-cp.reasoning, r.rng)
			b = append(b, '"')
			if cp.reasoning > 0 {
				b = append(b, `,"reasoning_content":"`...)
				b = appendWords(b, cp.reasoning, r.rng)
				b = append(b, '"')
			}
			b = append(b, "},"...)
		} else {
			b = append(b, `"text":"`...)
			b = appendWords(b, cp.tokens, r.rng)
			b = append(b, `",`...)
		}
		b = appendFinish(b, cp.finish)
		b = append(b, '}')
		completion += cp.tokens
		reasoning += cp.reasoning
	}
	b = append(b, ']')
	if usage {
		b = append(b, ',')
		b = appendUsage(b, prompt, completion, reasoning, r.s.cfg.CachedTokens)
	}
	if r.s.cfg.Timings {
		b = r.appendTimings(append(b, ','), prompt)
	}
	b = append(b, '}')
	r.buf = b
	r.finished = true

	h := r.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	r.tokens, r.reasoning = int64(completion), int64(reasoning)
	if r.tracing {
		r.trace.Status = http.StatusOK
		r.trace.CompletionTokens, r.trace.ReasoningTokens = completion, reasoning
		r.mark(KindBody, completion, 0, at)
		r.commit()
	}
	r.w.WriteHeader(http.StatusOK)
	if _, err := r.w.Write(b); err != nil {
		r.gone = true
	}
}

// wait sleeps until at, or until the client leaves (false). The deadline
// is absolute, so time spent writing earlier events is not added to it.
func (r *responder) wait(at time.Time) bool {
	if r.gone {
		return false
	}
	d := time.Until(at)
	if d <= 0 {
		select {
		case <-r.ctx.Done():
			r.gone = true
			return false
		default:
			return true
		}
	}
	r.timer.Reset(d)
	select {
	case <-r.timer.C:
		return true
	case <-r.ctx.Done():
		r.timer.Stop()
		r.gone = true
		return false
	}
}

// mark records an event about to be written. The time is taken here,
// immediately before the Write call.
func (r *responder) mark(kind string, tokens, choice int, intended time.Time) {
	if !r.tracing || r.committed {
		return
	}
	if len(r.trace.Events) >= maxTraceEvents {
		r.trace.EventsDropped++
		return
	}
	r.trace.Events = append(r.trace.Events, EventTime{At: time.Now(), Intended: intended, Kind: kind, Tokens: tokens, Choice: choice})
}

// commit stores the trace before the response's last write, so that a
// client that has read everything finds it.
func (r *responder) commit() {
	if !r.tracing || r.committed {
		return
	}
	r.trace.CompletionTokens, r.trace.ReasoningTokens = int(r.tokens), int(r.reasoning)
	r.s.commit(&r.trace)
	r.committed = true
}
