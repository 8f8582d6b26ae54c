package process

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/otelexport"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// Request records as OpenTelemetry log records (RecordConfig.OTLPLogs, or OTEL_LOGS_EXPORTER
// for every recording): a recording whose config asks for them gets a log route, held under
// keyLogRoute and its recorder's key, that keeps what its recorder keeps (recorder.Filter:
// routes, models, sampling). Every route holds the process's one exporter
// (otelexport.RequestLogs, under keyLogs), which starts with the first route and flushes and
// stops when the last one lets go. The log sink, beside the record sink, hands each record of
// a routed recording to the exporter's bounded queue; nothing waits for the network.
//
// Two configs whose recordings share a folder and options share one recorder and so one
// route: when either asks for log records, the requests of both are exported.

const (
	keyLogs     = "otellogs"
	keyLogRoute = "otellogs:"
)

// logsCloseTimeout bounds how long stopping the exporter waits for its last batches.
const logsCloseTimeout = 10 * time.Second

// logsState is the process's log export state.
type logsState struct {
	mu     sync.RWMutex
	routes map[string]*logRoute // by recorder key (record.RecordTo)
	// cur is the running exporter, nil when none runs.
	cur atomic.Pointer[otelexport.RequestLogs]
	// exported and dropped are the counts of the exporters that have stopped.
	exported atomic.Uint64
	dropped  [otelexport.NumLogDropReasons]atomic.Uint64
}

// logsExporter is the process's exporter, a held runner.
type logsExporter struct {
	l *otelexport.RequestLogs
	p *Process
}

// Destruct flushes what is queued (until logsCloseTimeout), stops the exporter and keeps its
// counts.
func (e *logsExporter) Destruct() error {
	p := e.p
	p.logs.cur.CompareAndSwap(e.l, nil)
	ctx, cancel := context.WithTimeout(context.Background(), logsCloseTimeout)
	defer cancel()
	err := e.l.Shutdown(ctx)
	st := e.l.Stats()
	p.logs.exported.Add(st.Exported)
	for i, n := range st.Dropped {
		p.logs.dropped[i].Add(n)
	}
	if err != nil {
		p.Log("otel").Warn("flushing the OpenTelemetry log export", zap.Error(err))
	}
	return nil
}

// logRoute sends the records of one recorder that its filter keeps to the exporter.
type logRoute struct {
	key    string
	filter recorder.Filter
	exp    *logsExporter
}

// Destruct takes the route out of the sink's table and lets go of the exporter.
func (r *logRoute) Destruct() error {
	p := r.exp.p
	p.logs.mu.Lock()
	if p.logs.routes[r.key] == r {
		delete(p.logs.routes, r.key)
	}
	p.logs.mu.Unlock()
	return p.LetGo(keyLogs)
}

// HoldLogRoute gives the recorder rec a log route that exports the records its options keep,
// starting the exporter with the first route; release lets go of it.
func (p *Process) HoldLogRoute(rec *Recorder, opts recorder.Options) (release func(), err error) {
	key := keyLogRoute + rec.Key
	_, _, err = Hold(p, key, func() (*logRoute, error) {
		exp, _, err := Hold(p, keyLogs, func() (*logsExporter, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := otelexport.NewLogs(ctx, otelexport.LogsOptions{})
			if err != nil {
				return nil, err
			}
			p.logs.cur.Store(l)
			p.Log("otel").Info("OpenTelemetry log records on", zap.String("service.instance.id", l.InstanceID))
			return &logsExporter{l: l, p: p}, nil
		})
		if err != nil {
			return nil, err
		}
		r := &logRoute{key: rec.Key, filter: recorder.NewFilter(opts), exp: exp}
		p.logs.mu.Lock()
		if p.logs.routes == nil {
			p.logs.routes = map[string]*logRoute{}
		}
		p.logs.routes[r.key] = r
		p.logs.mu.Unlock()
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return p.letGoOnce(key), nil
}

// logSink emits the records of routed recordings as log records. It runs on the record
// pipeline's worker, before the span sink ends the request's span (whose ids the log record
// carries).
type logSink struct{ p *Process }

func (s logSink) Consume(r *record.Record) {
	p := s.p
	if r.RecordTo == "" || p.logs.cur.Load() == nil {
		return
	}
	p.logs.mu.RLock()
	route := p.logs.routes[r.RecordTo]
	p.logs.mu.RUnlock()
	if route == nil || !route.filter.Keep(r) {
		return
	}
	route.exp.l.Emit(r)
}

// OTLPLogStats returns what the export of records as log records did since the process
// started: records exported and dropped by reason (otelexport.LogDropReason).
func (p *Process) OTLPLogStats() otelexport.LogStats {
	st := otelexport.LogStats{Exported: p.logs.exported.Load()}
	for i := range st.Dropped {
		st.Dropped[i] = p.logs.dropped[i].Load()
	}
	if l := p.logs.cur.Load(); l != nil {
		cur := l.Stats()
		st.Exported += cur.Exported
		for i, n := range cur.Dropped {
			st.Dropped[i] += n
		}
	}
	return st
}

var (
	descLogsExported = prometheus.NewDesc("llmtap_otlp_logs_exported_total",
		"Request records the OTLP receiver accepted as log records (record otlp_logs or OTEL_LOGS_EXPORTER).", nil, nil)
	descLogsDropped = prometheus.NewDesc("llmtap_otlp_logs_dropped_total",
		"Request records not delivered as OTLP log records (traffic, measurement and the recording files unaffected), by reason: queue_full (the export's bounded queue was full: the receiver is down or slow), export_failed (the export request failed or timed out), shutdown (still queued when the export stopped).",
		[]string{"reason"}, nil)
)

// logsCollector serves the log export's counters, every reason always present.
type logsCollector struct{ p *Process }

func (logsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLogsExported
	ch <- descLogsDropped
}

func (c logsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.OTLPLogStats()
	ch <- prometheus.MustNewConstMetric(descLogsExported, prometheus.CounterValue, float64(st.Exported))
	for r, n := range st.Dropped {
		ch <- prometheus.MustNewConstMetric(descLogsDropped, prometheus.CounterValue, float64(n), otelexport.LogDropReason(r).String())
	}
}

var _ prometheus.Collector = logsCollector{}
