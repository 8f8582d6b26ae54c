// Package pipeline carries finished request records off the request path: a bounded queue that
// never blocks the caller (it counts what it drops), one worker goroutine that finalizes each
// record (tokenizer counts, derived metrics) and hands it to the sinks in order.
package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Sink consumes finalized records. Consume runs on the pipeline's worker goroutine, one record
// at a time; it must not keep the record's slices for writing.
type Sink interface {
	Consume(r *record.Record)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(r *record.Record)

// Consume calls f(r).
func (f SinkFunc) Consume(r *record.Record) { f(r) }

// Pipeline is a bounded record queue with one worker.
type Pipeline struct {
	ch       chan *record.Record
	finalize func(*record.Record)

	mu     sync.RWMutex
	enrich []func(*record.Record)
	sinks  []Sink

	submitted atomic.Uint64
	dropped   atomic.Uint64
	processed atomic.Uint64

	linger time.Duration

	closeOnce sync.Once
	closing   chan struct{}
	done      chan struct{}
}

// New starts a pipeline with a queue of size records (default 4096 when size <= 0). finalize,
// when not nil, runs on each record before the sinks see it.
func New(size int, finalize func(*record.Record), sinks ...Sink) *Pipeline {
	if size <= 0 {
		size = 4096
	}
	p := &Pipeline{
		ch:       make(chan *record.Record, size),
		finalize: finalize,
		sinks:    sinks,
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
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

// AddSink adds a sink; it sees the records submitted from now on.
func (p *Pipeline) AddSink(s Sink) {
	p.mu.Lock()
	p.sinks = append(p.sinks, s)
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

// Submit queues r without blocking. It reports false, and counts a drop, when the queue is
// full or the pipeline is closed.
func (p *Pipeline) Submit(r *record.Record) bool {
	select {
	case <-p.closing:
		p.dropped.Add(1)
		return false
	default:
	}
	select {
	case p.ch <- r:
		p.submitted.Add(1)
		return true
	default:
		p.dropped.Add(1)
		return false
	}
}

// Dropped is the number of records that found the queue full.
func (p *Pipeline) Dropped() uint64 { return p.dropped.Load() }

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
		yieldBriefly()
	}
}

// Close stops accepting records, drains the queue into the sinks and joins the worker. It is
// idempotent.
func (p *Pipeline) Close() {
	p.closeOnce.Do(func() { close(p.closing) })
	<-p.done
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

func (p *Pipeline) handle(r *record.Record) {
	if p.finalize != nil {
		p.finalize(r)
	}
	p.mu.RLock()
	for _, fn := range p.enrich {
		fn(r)
	}
	for _, s := range p.sinks {
		s.Consume(r)
	}
	p.mu.RUnlock()
	// The request body is for the sinks only (a recorder keeps its own reference); dropping it
	// here keeps the ring of recent records from holding up to a body per record.
	r.RequestBody = nil
	p.processed.Add(1)
}
