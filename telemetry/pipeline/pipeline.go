// Package pipeline carries finished request records off the request path: a queue bounded in
// records and in bytes that never blocks the caller (it counts what it drops, by reason), one
// worker goroutine that finalizes each record (tokenizer counts, derived metrics) and hands it
// to the sinks in order, beside the route of the handler that measured it and its span. Close
// drains the queue and then closes what the records drain into (the sinks that are Closers,
// and what AddCloser added: recorders, exporters), so nothing that holds records closes before
// the last record reached it.
package pipeline

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Route says where the records of one handler go. It is made once, when the handler is
// provisioned, and never changed after; the zero Route (noRoute, for a record submitted
// without one) goes to no recorder and no SLO, and counts with the pipeline's tokenizer.
type Route struct {
	// Recorder names the recorder (internal/process's key) that writes the records; empty
	// when they are not recorded.
	Recorder string
	// SLO is the handler's SLOs, which its live records are counted against; nil for none.
	SLO *slo.Set
	// Tokens counts the tokens the server did not report (the handler's tokenizer); nil: the
	// pipeline's.
	Tokens tokens.Counter
	// Spans opens the span of a request that arrived at t0 (otel.Tracer.Start in export/otel); nil when
	// trace export is off.
	Spans func(ctx context.Context, h http.Header, t0 time.Time) trace.Span
}

var noRoute Route

// Routed is what the queue holds, by value: a record, its handler's route (never nil once
// submitted) and its request's span (nil without trace export).
type Routed struct {
	Record *record.Record
	Route  *Route
	Span   trace.Span
}

// Sink consumes finalized records. Consume runs on the pipeline's worker goroutine, one record
// at a time; it must not keep the record's slices for writing.
type Sink interface {
	Consume(r *record.Record)
}

// Closer is a Sink that drains (an exporter): the pipeline's Close closes it once the last
// record has reached it (see AddCloser for what drains routed records).
type Closer interface {
	Sink
	Close(ctx context.Context) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(r *record.Record)

// Consume calls f(r).
func (f SinkFunc) Consume(r *record.Record) { f(r) }

// DefaultMaxBytes is the default bound of the bytes records hold in the queue (SetMaxBytes).
const DefaultMaxBytes = 64 << 20

// Pipeline is a bounded record queue with one worker.
type Pipeline struct {
	ch       chan Routed
	finalize func(Routed)

	mu      sync.RWMutex
	enrich  []func(*record.Record)
	sinks   []func(Routed)
	closers []func(context.Context) error

	// maxBytes bounds queued, the Bytes of the records in the queue.
	maxBytes int64
	queued   atomic.Int64

	submitted    atomic.Uint64
	dropped      atomic.Uint64 // every drop, droppedBytes included
	droppedBytes atomic.Uint64
	processed    atomic.Uint64

	linger time.Duration

	closeOnce sync.Once
	closing   chan struct{}
	done      chan struct{}
}

// New starts a pipeline with a queue of size records (default 4096 when size <= 0). finalize,
// when not nil, runs on each record before the sinks see it.
func New(size int, finalize func(Routed), sinks ...Sink) *Pipeline {
	if size <= 0 {
		size = 4096
	}
	p := &Pipeline{
		ch:       make(chan Routed, size),
		maxBytes: DefaultMaxBytes,
		finalize: finalize,
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	for _, s := range sinks {
		p.AddSink(s)
	}
	go p.run()
	return p
}

// SetLinger makes the worker, once it has emptied the queue, wait d before it waits for the
// next record, so that records arriving in the meantime are handled in one wake-up rather than
// one each. At thousands of records per second (a load generator) waking the worker per record
// costs more than handling it; the price is that a record reaches the sinks up to d later.
// Zero (the default) handles each record as soon as it comes. Call it before records flow.
func (p *Pipeline) SetLinger(d time.Duration) { p.linger = d }

// SetMaxBytes bounds the Bytes of the records waiting in the queue (default DefaultMaxBytes,
// and n <= 0 means that default): a record that would take them past n is dropped and counted
// (DroppedBytes), as one that finds the queue full. A record larger than n is always dropped.
// Call it before records flow.
func (p *Pipeline) SetMaxBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxBytes
	}
	p.maxBytes = n
}

// Bytes is what the queue counts of a record against SetMaxBytes: the variable-length data
// it carries until it is finalized (the captured request body, the response text the
// tokenizer is to count, the inter-chunk gaps). The fixed part of a record (about a kilobyte)
// is bounded by the queue's length.
func Bytes(r *record.Record) int64 {
	return int64(len(r.RequestBody)+len(r.OutputText)+len(r.ReasoningText)) + 8*int64(len(r.InterChunkMs))
}

// AddSink adds a sink; it sees the records submitted from now on. A Closer is closed by Close.
func (p *Pipeline) AddSink(s Sink) {
	p.AddRouted(func(x Routed) { s.Consume(x.Record) })
	if c, ok := s.(Closer); ok {
		p.AddCloser(c.Close)
	}
}

// AddCloser adds a close, of what a routed sink writes to (the recorders): Close calls it once
// the last record has reached the sinks, in the order closes were added.
func (p *Pipeline) AddCloser(close func(context.Context) error) {
	p.mu.Lock()
	p.closers = append(p.closers, close)
	p.mu.Unlock()
}

// AddRouted adds a sink that reads, beside each record, its route and span (recorders, SLOs,
// span export); it sees the records submitted from now on, in order with the other sinks.
func (p *Pipeline) AddRouted(fn func(Routed)) {
	p.mu.Lock()
	p.sinks = append(p.sinks, fn)
	p.mu.Unlock()
}

// AddEnricher adds a step that runs on every record submitted from now on, after finalize and
// before any sink, so the fields it sets (GPU figures, say) are seen by every sink. Enrichers
// run in the order they were added, on the worker goroutine.
func (p *Pipeline) AddEnricher(fn func(*record.Record)) {
	p.mu.Lock()
	p.enrich = append(p.enrich, fn)
	p.mu.Unlock()
}

// Submit queues x without blocking (x.Route nil: the zero Route). It reports false, and
// counts a drop, when the queue is full (in records or in bytes) or the pipeline is closed.
func (p *Pipeline) Submit(x Routed) bool {
	select {
	case <-p.closing:
		p.dropped.Add(1)
		return false
	default:
	}
	if x.Route == nil {
		x.Route = &noRoute
	}
	n := Bytes(x.Record)
	if p.queued.Add(n) > p.maxBytes {
		p.queued.Add(-n)
		p.droppedBytes.Add(1)
		p.dropped.Add(1)
		return false
	}
	select {
	case p.ch <- x:
		p.submitted.Add(1)
		return true
	default:
		p.queued.Add(-n)
		p.dropped.Add(1)
		return false
	}
}

// Dropped is the number of records dropped: the queue was full, in records or in bytes
// (DroppedBytes), or the pipeline closed.
func (p *Pipeline) Dropped() uint64 { return p.dropped.Load() }

// DroppedBytes is the number of records dropped because the records queued held SetMaxBytes
// bytes (counted in Dropped too).
func (p *Pipeline) DroppedBytes() uint64 { return p.droppedBytes.Load() }

// QueuedBytes is the Bytes of the records waiting in the queue.
func (p *Pipeline) QueuedBytes() int64 { return p.queued.Load() }

// Processed is the number of records handed to the sinks.
func (p *Pipeline) Processed() uint64 { return p.processed.Load() }

// Pending is the number of records waiting in the queue.
func (p *Pipeline) Pending() int { return len(p.ch) }

// Flush waits until every record submitted before the call has reached the sinks, or the
// pipeline is closed.
func (p *Pipeline) Flush() {
	target := p.submitted.Load()
	for p.processed.Load() < target {
		select {
		case <-p.done:
			return
		default:
		}
		time.Sleep(200 * time.Microsecond) // Flush is for tests and shutdown
	}
}

// Close stops accepting records, drains the queue into the sinks, joins the worker and then
// closes the sinks that are Closers and calls AddCloser's closes, in the order they were
// added, joining their errors. When ctx ends first it returns ctx's error: the worker drains
// on without it and nothing is closed. Only the first call closes; a later one waits for the
// worker.
func (p *Pipeline) Close(ctx context.Context) error {
	first := false
	p.closeOnce.Do(func() { close(p.closing); first = true })
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !first {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c(ctx))
	}
	return errors.Join(errs...)
}

func (p *Pipeline) run() {
	defer close(p.done)
	var linger *time.Timer
	for {
		select {
		case r := <-p.ch:
			p.handle(r)
			if p.linger <= 0 {
				continue
			}
			for len(p.ch) > 0 {
				p.handle(<-p.ch)
			}
			if linger == nil {
				linger = time.NewTimer(p.linger)
			} else {
				linger.Reset(p.linger)
			}
			select {
			case <-linger.C:
			case <-p.closing:
				linger.Stop()
			}
		case <-p.closing:
			for {
				select {
				case r := <-p.ch:
					p.handle(r)
				default:
					return
				}
			}
		}
	}
}

func (p *Pipeline) handle(x Routed) {
	r := x.Record
	// Its submitter no longer touches r, so its size is what Submit counted.
	defer p.queued.Add(-Bytes(r))
	if p.finalize != nil {
		p.finalize(x)
	}
	p.mu.RLock()
	for _, fn := range p.enrich {
		fn(r)
	}
	for _, s := range p.sinks {
		s(x)
	}
	p.mu.RUnlock()
	// The request body and the prompt's token ids are for the sinks only (a recorder keeps its
	// own references); dropping them here keeps the ring of recent records from holding them.
	r.RequestBody, r.PromptIDs = nil, nil
	p.processed.Add(1)
}
