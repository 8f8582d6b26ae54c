package mock

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Server is an OpenAI-compatible (and Anthropic Messages) mock inference server. It implements
// http.Handler with these routes:
//
//	POST /v1/chat/completions   chat, streaming (SSE) or not, n choices
//	POST /v1/completions        legacy completions, streaming or not
//	POST /v1/messages           Anthropic's Messages API, streaming or not
//	POST /api/chat              Ollama's native chat, NDJSON (the default) or one body
//	POST /api/generate          Ollama's native generate, likewise
//	POST /generate_stream       TGI's native stream (SSE)
//	POST /generate              TGI's native body, with its timing headers
//	GET  /v1/models             the configured model
//	GET  /health                200, empty body (vLLM's health route)
//	GET  /metrics               vLLM-style queue, prefill and decode histograms
//
// Every generation request may wait for a slot first (Config.Slots); the
// mock then knows its own split of the request into queue (arrival to
// slot), prefill (slot to the first token's write) and decode (first to
// last token's write), and reports it in each server's own shape (see
// timings.go).
//
// It serves any transport the caller chooses (HTTP/1.1, h2c, TLS); see
// Start and ListenAndServe for a ready one. A Server is safe for
// concurrent use. Handlers run on the caller's goroutines and start none
// of their own.
type Server struct {
	cfg        Config
	modelsBody []byte
	pool       sync.Pool // *responder

	seq atomic.Uint64 // requests received, for ids and seeds

	requests, streams, badRequests, errs, streamErrs atomic.Int64
	canceled, inFlight, tokens, events, logErrs      atomic.Int64

	mu       sync.Mutex // guards traces and arrivals
	traces   ring[Trace]
	arrivals ring[time.Time]

	tracing  bool       // build traces: LogEvents or an event log
	logMu    sync.Mutex // guards eventLog and logFile, serialises writes
	eventLog io.Writer
	logFile  *os.File // owned when opened from EventLogPath

	active sync.WaitGroup // handlers running, joined by Start's stop

	slots   chan struct{} // Config.Slots tokens; nil when unlimited
	waiting atomic.Int64  // requests waiting for a slot
	kvHeld  atomic.Int64  // KV-cache tokens held by running requests (Config.KVCacheTokens)
	metrics splitMetrics  // the /metrics histograms
}

// New validates cfg, fills in its defaults and returns a Server. When
// cfg.EventLogPath is set it opens that file; Close closes it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mockllm: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, eventLog: cfg.EventLog}
	if s.eventLog == nil && cfg.EventLogPath != "" {
		f, err := os.OpenFile(cfg.EventLogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("mockllm: opening event log: %w", err)
		}
		s.logFile, s.eventLog = f, f
	}
	s.tracing = cfg.LogEvents || s.eventLog != nil
	if cfg.Slots > 0 {
		s.slots = make(chan struct{}, cfg.Slots)
	}
	b := []byte(`{"object":"list","data":[{"id":`)
	b = appendJSONString(b, cfg.Model)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"owned_by":"llmtap","root":`...)
	b = appendJSONString(b, cfg.Model)
	b = append(b, `,"parent":null,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(cfg.MaxOutputTokens), 10)
	s.modelsBody = append(b, "}]}"...)
	s.pool.New = func() any { return newResponder(s) }
	return s, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Warm loads now what the first requests would otherwise load while they are answered (the
// o200k_base vocabulary, when prompt_tokens are counted with it): without it the first
// responses arrive tens of milliseconds late, which a benchmark of a 20 ms mock sees as its
// TTFT p99. Call it before the load that is measured.
func (s *Server) Warm() {
	if s.cfg.PromptCounter == PromptO200k {
		o200k()
	}
}

// Close closes the event log file opened from Config.EventLogPath, if any.
// The Server keeps answering; only the file is released.
func (s *Server) Close() error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.logFile == nil {
		return nil
	}
	err := s.logFile.Close()
	s.logFile, s.eventLog = nil, nil
	if err != nil {
		return fmt.Errorf("mockllm: closing event log: %w", err)
	}
	return nil
}

// generationRoutes are the paths that generate, each in its server's shape.
var generationRoutes = map[string]endpoint{
	"/v1/chat/completions": chatEndpoint,
	"/v1/completions":      completionEndpoint,
	"/v1/messages":         messagesEndpoint,
	"/api/chat":            ollamaChatEndpoint,
	"/api/generate":        ollamaGenerateEndpoint,
	"/generate_stream":     tgiStreamEndpoint,
	"/generate":            tgiEndpoint,
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	s.active.Add(1)
	defer s.active.Done()
	if ep, ok := generationRoutes[r.URL.Path]; ok {
		if s.allow(w, r, http.MethodPost) {
			s.generate(w, r, ep, arrived)
		}
		return
	}
	switch r.URL.Path {
	case "/metrics":
		if s.allow(w, r, http.MethodGet) {
			s.serveMetrics(w)
		}
	case "/v1/models":
		if s.allow(w, r, http.MethodGet) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(s.modelsBody)
		}
	case "/health":
		if s.allow(w, r, http.MethodGet) {
			w.WriteHeader(http.StatusOK)
		}
	default:
		s.badRequests.Add(1)
		writeError(w, http.StatusNotFound, "not_found_error", "no route for "+r.URL.Path)
	}
}

// allow answers 405 unless r uses method (HEAD is allowed with GET).
func (s *Server) allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	s.badRequests.Add(1)
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed")
	return false
}

// writeError sends an OpenAI-style JSON error body.
func writeError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(appendErrorObject(nil, message, typ, status))
}

// Traces returns the recorded traces, oldest first (Config.LogEvents).
// The slice and its traces are copies the caller may keep.
func (s *Server) Traces() []Trace {
	s.mu.Lock()
	out := s.traces.snapshot()
	s.mu.Unlock()
	for i := range out {
		out[i].Events = slices.Clone(out[i].Events)
	}
	return out
}

// TraceByID returns the most recent trace with the request id, scanning
// the log from the newest (O(LogLimit)).
func (s *Server) TraceByID(id string) (Trace, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.traces.buf
	for k := range len(b) {
		i := (s.traces.next - 1 - k + 2*len(b)) % len(b)
		if b[i].RequestID == id {
			t := b[i]
			t.Events = slices.Clone(t.Events)
			return t, true
		}
	}
	return Trace{}, false
}

// Arrivals returns the arrival times of the most recent generation
// requests (Config.LogLimit of them), oldest first. Arrivals are taken on
// entry to the handler, before the body is read, whatever the response.
func (s *Server) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrivals.snapshot()
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	tracesDropped, arrivalsDropped := s.traces.dropped, s.arrivals.dropped
	s.mu.Unlock()
	return Stats{
		Requests:        s.requests.Load(),
		Streams:         s.streams.Load(),
		BadRequests:     s.badRequests.Load(),
		Errors:          s.errs.Load(),
		StreamErrors:    s.streamErrs.Load(),
		Canceled:        s.canceled.Load(),
		InFlight:        s.inFlight.Load(),
		Tokens:          s.tokens.Load(),
		Events:          s.events.Load(),
		TracesDropped:   tracesDropped,
		ArrivalsDropped: arrivalsDropped,
		EventLogErrors:  s.logErrs.Load(),
	}
}

func (s *Server) recordArrival(t time.Time) {
	s.mu.Lock()
	s.arrivals.push(t, s.cfg.LogLimit)
	s.mu.Unlock()
}

// commit stores a finished trace in memory (when LogEvents is on). It runs
// before the response's last write, so a client that has read the whole
// response always finds its trace.
func (s *Server) commit(t *Trace) {
	if !s.cfg.LogEvents {
		return
	}
	s.mu.Lock()
	s.traces.push(*t, s.cfg.LogLimit)
	s.mu.Unlock()
}

// logTrace writes t to the event log, after the response is complete so
// that a slow writer does not delay the client.
func (s *Server) logTrace(t *Trace) {
	s.logMu.Lock()
	on := s.eventLog != nil
	s.logMu.Unlock()
	if !on {
		return
	}
	line := marshalTraceLine(t)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.eventLog == nil { // closed meanwhile
		return
	}
	if _, err := s.eventLog.Write(line); err != nil {
		s.logErrs.Add(1)
	}
}

var _ http.Handler = (*Server)(nil)

var _ io.Closer = (*Server)(nil)
