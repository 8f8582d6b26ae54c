package mock

import (
	"encoding/json"
	"time"
)

// Event kinds of a Trace. Only KindContent and KindReasoning are content
// events in the sense of llmtap's metric definitions.
const (
	KindHeaders   = "headers"   // status line and headers flushed (streams only)
	KindRole      = "role"      // role-only chat chunk
	KindStart     = "start"     // Anthropic message_start or content_block_start
	KindReasoning = "reasoning" // delta.reasoning_content chunk
	KindContent   = "content"   // delta.content (chat) or text (completions) chunk
	KindFinish    = "finish"    // empty delta with finish_reason
	KindUsage     = "usage"     // usage chunk with choices []
	KindDone      = "done"      // data: [DONE]
	KindError     = "error"     // HTTP error body, or error event mid-stream
	KindBody      = "body"      // the whole non-streaming JSON body
)

// maxTraceEvents bounds the events kept for one response; the rest are
// counted in Trace.EventsDropped.
const maxTraceEvents = 1 << 16

// EventTime is the ground truth of one write to the client.
type EventTime struct {
	// At is the time taken immediately before the Write call of the
	// event. It carries a monotonic reading; At.UnixNano() is wall time.
	// Events written in the same schedule step (for example finish, usage
	// and done) are flushed together after the last of them.
	At time.Time
	// Intended is when the schedule meant the event to be written: the
	// arrival for headers, role chunks and HTTP errors, the generation time
	// of the event's last token otherwise. At - Intended is the mock's own
	// lateness.
	Intended time.Time
	// Kind is one of the Kind constants.
	Kind string
	// Tokens is the number of output tokens the event carries (content and
	// reasoning events, and the non-streaming body); 0 otherwise.
	Tokens int
	// Choice is the choice index the event belongs to; 0 for events that
	// belong to no choice (headers, usage, done, error).
	Choice int
}

// Trace is the ground truth of one response, recorded when it ends.
type Trace struct {
	// RequestID is the X-Request-Id request header, or "mock-<k>" for the
	// k-th request (from 0) when the header is absent. The response echoes
	// it in its own X-Request-Id header and in the completion id.
	RequestID string
	Path      string // URL path
	Proto     string // "HTTP/1.1", "HTTP/2.0"
	// Arrived is when the handler was entered, before the body was read.
	Arrived time.Time
	Status  int  // HTTP status sent
	Stream  bool // an SSE response
	// PromptTokens is the prompt_tokens reported (or that would have been).
	PromptTokens int
	// CompletionTokens and ReasoningTokens count the output tokens actually
	// sent, over all choices; reasoning is included in completion.
	CompletionTokens int
	ReasoningTokens  int
	// Canceled is set when the client went away (or a write failed) before
	// the response was complete.
	Canceled bool
	// Events lists the writes in order.
	Events []EventTime
	// EventsDropped counts events beyond the per-trace bound of 65,536.
	EventsDropped int
}

// traceLine is the JSONL form of a Trace: wall-clock Unix nanoseconds so
// that another process can line the events up with its own clock.
type traceLine struct {
	RequestID        string      `json:"request_id"`
	Path             string      `json:"path"`
	Proto            string      `json:"proto"`
	ArrivedNS        int64       `json:"arrived_ns"`
	Status           int         `json:"status"`
	Stream           bool        `json:"stream"`
	PromptTokens     int         `json:"prompt_tokens"`
	CompletionTokens int         `json:"completion_tokens"`
	ReasoningTokens  int         `json:"reasoning_tokens"`
	Canceled         bool        `json:"canceled,omitempty"`
	EventsDropped    int         `json:"events_dropped,omitempty"`
	Events           []eventLine `json:"events"`
}

type eventLine struct {
	Kind       string `json:"kind"`
	TNS        int64  `json:"t_ns"`
	IntendedNS int64  `json:"intended_ns"`
	Tokens     int    `json:"tokens,omitempty"`
	Choice     int    `json:"choice,omitempty"`
}

// marshalTraceLine encodes t as one JSON line (with the newline).
func marshalTraceLine(t *Trace) []byte {
	l := traceLine{
		RequestID: t.RequestID, Path: t.Path, Proto: t.Proto,
		ArrivedNS: t.Arrived.UnixNano(), Status: t.Status, Stream: t.Stream,
		PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
		ReasoningTokens: t.ReasoningTokens, Canceled: t.Canceled,
		EventsDropped: t.EventsDropped, Events: make([]eventLine, len(t.Events)),
	}
	for i, e := range t.Events {
		l.Events[i] = eventLine{Kind: e.Kind, TNS: e.At.UnixNano(), IntendedNS: e.Intended.UnixNano(), Tokens: e.Tokens, Choice: e.Choice}
	}
	b, _ := json.Marshal(l) // plain fields; cannot fail
	return append(b, '\n')
}

// ring keeps the most recent values up to a capacity.
type ring[T any] struct {
	buf     []T
	next    int   // slot of the next push once buf is full
	dropped int64 // values overwritten
}

func (r *ring[T]) push(v T, limit int) {
	if len(r.buf) < limit {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.dropped++
}

// snapshot returns the values oldest first.
func (r *ring[T]) snapshot() []T {
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// Stats are cumulative counters since New.
type Stats struct {
	Requests        int64 // generation requests received (chat and completions)
	Streams         int64 // of which answered with a 200 stream
	BadRequests     int64 // answered 400/404/405/413
	Errors          int64 // answered with an injected HTTP 500
	StreamErrors    int64 // streams ended by an injected error event
	Canceled        int64 // responses cut short by the client or a failed write
	InFlight        int64 // generation requests being answered now
	Tokens          int64 // output tokens sent (content and reasoning)
	Events          int64 // SSE events written, including role, finish, usage, done
	TracesDropped   int64 // traces evicted from the in-memory log
	ArrivalsDropped int64 // arrivals evicted from the arrival log
	EventLogErrors  int64 // failed writes to the event log
}
