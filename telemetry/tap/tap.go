// Package tap bundles everything a proxy (or a client) needs to measure LLM traffic: a pool of
// per-request meters, the bounded record pipeline that finalizes records off the request path,
// the percentile aggregator and the ring of recent records.
package tap

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Options configure a Tap. The zero value means the defaults.
type Options struct {
	// Meter bounds what each request's meter holds.
	Meter meter.Options
	// Stats configures aggregation: rolling window, SLOs for goodput, label cardinality.
	Stats stats.Options
	// Recent is how many recent records are kept for /llmtap/requests (default 1000).
	Recent int
	// Queue is the capacity of the record pipeline (default 4096). A full queue drops records
	// and counts them; it never blocks a request.
	Queue int
	// QueueBytes bounds the bytes the records waiting in the pipeline hold (request bodies,
	// response texts to count; see pipeline.Bytes), default pipeline.DefaultMaxBytes. A record
	// that would take them past it is dropped and counted, as on a full queue.
	QueueBytes int64
	// Linger batches the record pipeline's wake-ups (see pipeline.SetLinger): records reach
	// the statistics and sinks up to this much later, in exchange for one wake-up per batch
	// instead of one per record. For load generators; zero (the proxy) handles each record
	// at once.
	Linger time.Duration
	// Tokens counts the tokens a server did not report; nil means the default tokenizer
	// (o200k_base).
	Tokens tokens.Counter
}

// Tap measures requests. Begin and End are safe for concurrent use.
type Tap struct {
	opts     Options
	meters   *meter.Pool
	pipe     *pipeline.Pipeline
	stats    *stats.Aggregator
	recent   *record.Ring
	inFlight atomic.Int64
}

// New starts a Tap; Close stops it.
func New(opts Options) *Tap {
	t := &Tap{
		opts:   opts,
		meters: meter.NewPool(opts.Meter),
		stats:  stats.New(opts.Stats),
		recent: record.NewRing(opts.Recent),
	}
	finalize := func(x pipeline.Routed) { meter.Finalize(x.Record, cmp.Or(x.Route.Tokens, opts.Tokens)) }
	t.pipe = pipeline.New(opts.Queue, finalize, pipeline.SinkFunc(t.stats.Add), t.recent)
	t.pipe.SetLinger(opts.Linger)
	t.pipe.SetMaxBytes(opts.QueueBytes)
	return t
}

// Begin starts measuring a request to path that arrived at t0, with a meter from the tap's
// default pool.
func (t *Tap) Begin(t0 time.Time, path string) *meter.Meter {
	return t.BeginWith(t.meters, t0, path)
}

// BeginWith is Begin with a meter from pool (a caller with its own meter options, such as one
// handler among several).
func (t *Tap) BeginWith(pool *meter.Pool, t0 time.Time, path string) *meter.Meter {
	t.inFlight.Add(1)
	return pool.Get(t0, path)
}

// End closes the measurement at end, submits the record without a route and recycles the
// meter. failure and msg name an error the caller saw (see meter.Finish). It returns the (not
// yet finalized) record, which the caller must not modify.
func (t *Tap) End(m *meter.Meter, end time.Time, failure, msg string) *record.Record {
	return pooled{t: t}.End(m, end, failure, msg)
}

// Finish is End without handing the record to the pipeline: the caller may read the record on
// the request path (to expose its figures) until it calls Submit, and must call it.
func (t *Tap) Finish(m *meter.Meter, end time.Time, failure, msg string) *record.Record {
	r := m.Finish(end, failure, msg)
	m.Release()
	t.inFlight.Add(-1)
	return r
}

// Submit hands a record Finish returned to the pipeline, with its route and span; the caller
// no longer touches the record.
func (t *Tap) Submit(x pipeline.Routed) { t.pipe.Submit(x) }

// AddSink adds a consumer of finalized records (metrics, statistics).
func (t *Tap) AddSink(s pipeline.Sink) { t.pipe.AddSink(s) }

// AddRouted adds a consumer of finalized records that reads their routes and spans
// (recorders, SLOs, span export; see pipeline.AddRouted).
func (t *Tap) AddRouted(fn func(pipeline.Routed)) { t.pipe.AddRouted(fn) }

// AddEnricher adds a step that completes finalized records before any sink sees them (see
// pipeline.AddEnricher).
func (t *Tap) AddEnricher(fn func(*record.Record)) { t.pipe.AddEnricher(fn) }

// AddCloser adds a close that the tap's Close calls once the last record has reached the sinks
// (see pipeline.AddCloser).
func (t *Tap) AddCloser(close func(context.Context) error) { t.pipe.AddCloser(close) }

// InFlight is the number of requests being measured now.
func (t *Tap) InFlight() int64 { return t.inFlight.Load() }

// Dropped is the number of records the pipeline dropped because its queue was full, in
// records or in bytes.
func (t *Tap) Dropped() uint64 { return t.pipe.Dropped() }

// DroppedBytes is the part of Dropped that found the queue full in bytes (Options.QueueBytes).
func (t *Tap) DroppedBytes() uint64 { return t.pipe.DroppedBytes() }

// Stats is the aggregator.
func (t *Tap) Stats() *stats.Aggregator { return t.stats }

// Recent is the ring of recent finalized records.
func (t *Tap) Recent() *record.Ring { return t.recent }

// Flush waits until every record ended so far has been finalized and aggregated.
func (t *Tap) Flush() { t.pipe.Flush() }

// Close drains the pipeline, stops its worker and closes the sinks that drain (see
// pipeline.Close). It is idempotent.
func (t *Tap) Close(ctx context.Context) error { return t.pipe.Close(ctx) }
