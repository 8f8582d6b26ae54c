package otel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Defaults of LogsOptions' zero values.
const (
	// DefaultLogsQueue bounds the log records waiting for (or in) an export: what a Collector
	// that is down or slow can cost, at most, before records are dropped.
	DefaultLogsQueue = 2048
	// DefaultLogsBatch is the most log records sent in one export request.
	DefaultLogsBatch = 512
	// DefaultLogsInterval is the longest a log record waits before its batch is sent.
	DefaultLogsInterval = time.Second
	// DefaultLogsTimeout bounds one export request (retries included).
	DefaultLogsTimeout = 10 * time.Second
)

// EventRequest is the event name of the log record of one request.
const EventRequest = "llmtap.request"

// LogsEnabled reports whether the environment asks for request records as log records:
// OTEL_SDK_DISABLED is not "true" and OTEL_LOGS_EXPORTER names an exporter other than "none".
// Unlike metrics and traces, an OTLP endpoint alone does not turn logs on: a log record per
// request is a volume of data its receiver must have asked for.
func LogsEnabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exp := strings.TrimSpace(getenv("OTEL_LOGS_EXPORTER"))
	return exp != "" && exp != "none"
}

// LogsOptions configure RequestLogs. The zero value of a field means its default.
type LogsOptions struct {
	// MaxQueue bounds the log records emitted but not yet exported (queued or in an export
	// request); a record that would exceed it is dropped and counted (LogQueueFull). It is the
	// BatchProcessor's max queue size. Default OTEL_BLRP_MAX_QUEUE_SIZE, else DefaultLogsQueue
	// (and likewise OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, OTEL_BLRP_SCHEDULE_DELAY and
	// OTEL_BLRP_EXPORT_TIMEOUT for the fields below).
	MaxQueue int
	// MaxBatch is the most records in one export request. Default DefaultLogsBatch, at most
	// MaxQueue.
	MaxBatch int
	// Interval is the longest a record waits before its batch is sent. Default
	// DefaultLogsInterval.
	Interval time.Duration
	// Timeout bounds one export request; a batch that fails or times out is dropped and
	// counted (LogExportFailed). Default DefaultLogsTimeout.
	Timeout time.Duration
	// Exporter sends the batches. Nil: the exporter the OTEL_* environment names, through
	// the contrib autoexport package (OTEL_LOGS_EXPORTER otlp by default or console;
	// OTEL_EXPORTER_OTLP_PROTOCOL and _LOGS_PROTOCOL grpc or http/protobuf;
	// OTEL_EXPORTER_OTLP_ENDPOINT and _LOGS_ENDPOINT, _HEADERS, …).
	Exporter sdklog.Exporter
	// Version is service.version on the resource; empty leaves it out.
	Version string
}

// fromEnv fills the zero fields of o from the batch log record processor's standard
// variables: OTEL_BLRP_MAX_QUEUE_SIZE, OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, OTEL_BLRP_SCHEDULE_DELAY
// and OTEL_BLRP_EXPORT_TIMEOUT (milliseconds). A value that is not a positive integer is
// ignored. They are read here, not left to the SDK, because the queue bound is also the
// in-flight bound RequestLogs keeps.
func (o LogsOptions) fromEnv(getenv func(string) string) LogsOptions {
	num := func(key string) int {
		n, err := strconv.Atoi(strings.TrimSpace(getenv(key)))
		if err != nil || n <= 0 {
			return 0
		}
		return n
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = num("OTEL_BLRP_MAX_QUEUE_SIZE")
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = num("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE")
	}
	if o.Interval <= 0 {
		o.Interval = time.Duration(num("OTEL_BLRP_SCHEDULE_DELAY")) * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Duration(num("OTEL_BLRP_EXPORT_TIMEOUT")) * time.Millisecond
	}
	return o
}

// LogDropReason says why a request's log record was not delivered to the receiver.
type LogDropReason int

const (
	// LogQueueFull: MaxQueue records were already waiting (the receiver is down or slow).
	LogQueueFull LogDropReason = iota
	// LogExportFailed: the export request carrying it failed or timed out.
	LogExportFailed
	// LogShutdown: it was emitted after shutdown began, or was still queued when shutdown
	// gave up waiting.
	LogShutdown
	// NumLogDropReasons is the number of reasons.
	NumLogDropReasons
)

// String is the reason's label on /metrics.
func (r LogDropReason) String() string {
	return [NumLogDropReasons]string{"queue_full", "export_failed", "shutdown"}[r]
}

// LogStats count what RequestLogs did with the records it was given.
type LogStats struct {
	// Exported is the number of log records the receiver accepted.
	Exported uint64
	// Dropped is the number of log records lost, by LogDropReason.
	Dropped [NumLogDropReasons]uint64
}

// RequestLogs exports request records as OpenTelemetry log records, one per request, through
// the Go logs SDK: Emit maps the record to a log record and hands it to a BatchProcessor whose
// queue is bounded by LogsOptions.MaxQueue; the processor's goroutine sends the batches. Emit
// never blocks and never waits for the network: a record that does not fit is dropped and
// counted, and every record emitted is counted once, as exported or dropped by reason.
type RequestLogs struct {
	provider *sdklog.LoggerProvider
	logger   log.Logger
	max      int64

	// inflight counts records emitted and not yet through an export (queued or being sent):
	// it never exceeds max, so the processor's own queue, which drops its oldest record when
	// full without telling anyone, never overflows.
	inflight atomic.Int64
	exported atomic.Uint64
	dropped  [NumLogDropReasons]atomic.Uint64
	closing  atomic.Bool // no more Emit
	closed   atomic.Bool // shutdown returned: late export results are no longer counted

	// InstanceID is the resource's service.instance.id.
	InstanceID string
}

// NewLogs builds the logs pipeline: the exporter (LogsOptions.Exporter or the environment's),
// a BatchProcessor with an explicit max queue size, and a LoggerProvider with the resource the
// metrics and traces have (service.name llmtap, service.instance.id, OTEL_RESOURCE_ATTRIBUTES).
// The caller calls Shutdown, which flushes what is queued.
func NewLogs(ctx context.Context, o LogsOptions) (*RequestLogs, error) {
	o = o.fromEnv(os.Getenv)
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultLogsQueue
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultLogsBatch
	}
	o.MaxBatch = min(o.MaxBatch, o.MaxQueue)
	if o.Interval <= 0 {
		o.Interval = DefaultLogsInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLogsTimeout
	}
	exp := o.Exporter
	if exp == nil {
		var err error
		if exp, err = autoexport.NewLogExporter(ctx); err != nil {
			return nil, fmt.Errorf("configuring the OpenTelemetry log exporter from OTEL_* variables: %w", err)
		}
	}
	res, err := newResource(ctx, o.Version)
	if err != nil {
		return nil, errors.Join(err, exp.Shutdown(ctx))
	}
	l := &RequestLogs{max: int64(o.MaxQueue)}
	if v, ok := res.Set().Value(attrServiceInstanceID); ok {
		l.InstanceID = v.AsString()
	}
	bp := sdklog.NewBatchProcessor(countingExporter{Exporter: exp, l: l},
		sdklog.WithMaxQueueSize(o.MaxQueue), sdklog.WithExportMaxBatchSize(o.MaxBatch),
		sdklog.WithExportInterval(o.Interval), sdklog.WithExportTimeout(o.Timeout))
	l.provider = sdklog.NewLoggerProvider(sdklog.WithProcessor(bp), sdklog.WithResource(res),
		// Every record field is an attribute: the SDK's default limit of 128 must not cut them.
		sdklog.WithAttributeCountLimit(-1),
		// The keys are unique by construction (JSON field names, the renames and the derived
		// attributes are distinct; TestLogRecordEqualsRecordsFile counts them): the SDK's
		// deduplication, a map insert per attribute, was 70 % of Emit's time.
		sdklog.WithAllowKeyDuplication())
	l.logger = l.provider.Logger(ScopeName)
	return l, nil
}

// Emit maps r to a log record and queues it for export, without blocking. It reports false
// when the record was dropped (counted in Stats). The log record carries the trace and span
// ids of span, the request's (nil when it has none); call Emit before the span sink (EndSpan)
// ends it.
func (l *RequestLogs) Emit(r *record.Record, span trace.Span) bool {
	if l.closing.Load() {
		l.dropped[LogShutdown].Add(1)
		return false
	}
	if l.inflight.Add(1) > l.max {
		l.inflight.Add(-1)
		l.dropped[LogQueueFull].Add(1)
		return false
	}
	ctx := context.Background()
	if span != nil {
		ctx = trace.ContextWithSpanContext(ctx, span.SpanContext())
	}
	var lr log.Record
	FillLogRecord(&lr, r)
	l.logger.Emit(ctx, lr)
	return true
}

// Stats returns the counts so far.
func (l *RequestLogs) Stats() LogStats {
	s := LogStats{Exported: l.exported.Load()}
	for i := range s.Dropped {
		s.Dropped[i] = l.dropped[i].Load()
	}
	return s
}

// ForceFlush exports what is queued now, or gives up when ctx ends.
func (l *RequestLogs) ForceFlush(ctx context.Context) error { return l.provider.ForceFlush(ctx) }

// Shutdown stops taking records, exports what is queued until ctx ends, and stops the
// exporter. Records still queued when it returns are counted as LogShutdown. It is safe to
// call more than once.
func (l *RequestLogs) Shutdown(ctx context.Context) error {
	l.closing.Store(true)
	err := l.provider.Shutdown(ctx)
	if l.closed.CompareAndSwap(false, true) {
		if n := l.inflight.Swap(0); n > 0 {
			l.dropped[LogShutdown].Add(uint64(n))
		}
	}
	return err
}

// countingExporter counts every record once, as exported or failed, and takes it out of the
// in-flight count, after its export request returned.
type countingExporter struct {
	sdklog.Exporter
	l *RequestLogs
}

func (c countingExporter) Export(ctx context.Context, recs []sdklog.Record) error {
	err := c.Exporter.Export(ctx, recs)
	if n := len(recs); n > 0 && !c.l.closed.Load() {
		if err != nil {
			c.l.dropped[LogExportFailed].Add(uint64(n))
		} else {
			c.l.exported.Add(uint64(n))
		}
		c.l.inflight.Add(-int64(n))
	}
	return err
}
