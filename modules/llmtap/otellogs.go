package llmtap

import (
	"context"
	"fmt"
	"os"
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
// for every recording): a recording whose config asks for them gets a log route, held in
// proc.pool under keyLogRoute and its recorder's key, that keeps what its recorder keeps
// (recorder.Filter: routes, models, sampling). Every route holds the process's one exporter
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

// logsState is the process's log export state (proc.logs).
type logsState struct {
	mu     sync.RWMutex
	routes map[string]*logRoute // by recorder key (record.RecordTo)
	// cur is the running exporter, nil when none runs.
	cur atomic.Pointer[otelexport.RequestLogs]
	// exported and dropped are the counts of the exporters that have stopped.
	exported atomic.Uint64
	dropped  [otelexport.NumLogDropReasons]atomic.Uint64
}

// logsExporter is the process's exporter, a proc.pool runner.
type logsExporter struct{ l *otelexport.RequestLogs }

// Destruct flushes what is queued (until logsCloseTimeout), stops the exporter and keeps its
// counts.
func (e *logsExporter) Destruct() error {
	proc.logs.cur.CompareAndSwap(e.l, nil)
	ctx, cancel := context.WithTimeout(context.Background(), logsCloseTimeout)
	defer cancel()
	err := e.l.Shutdown(ctx)
	st := e.l.Stats()
	proc.logs.exported.Add(st.Exported)
	for i, n := range st.Dropped {
		proc.logs.dropped[i].Add(n)
	}
	if err != nil {
		logger("otel").Warn("flushing the OpenTelemetry log export", zap.Error(err))
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
	proc.logs.mu.Lock()
	if proc.logs.routes[r.key] == r {
		delete(proc.logs.routes, r.key)
	}
	proc.logs.mu.Unlock()
	return letGo(keyLogs)
}

// provisionLogs gives rc a log route when the config or the environment asks for log records.
// A config that asks fails when the exporter cannot be configured; when only the environment
// asks, the failure is logged and the proxy goes on without log records, as with the other
// OTEL_* signals.
func (h *Handler) provisionLogs(rc *recording, opts recorder.Options) error {
	byConfig := h.Record.OTLPLogs
	if !byConfig && !otelexport.LogsEnabled(os.Getenv) {
		return nil
	}
	key := keyLogRoute + rc.entry.key
	_, _, err := hold(key, func() (*logRoute, error) {
		exp, _, err := hold(keyLogs, func() (*logsExporter, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := otelexport.NewLogs(ctx, otelexport.LogsOptions{})
			if err != nil {
				return nil, err
			}
			proc.logs.cur.Store(l)
			logger("otel").Info("OpenTelemetry log records on", zap.String("service.instance.id", l.InstanceID))
			return &logsExporter{l: l}, nil
		})
		if err != nil {
			return nil, err
		}
		r := &logRoute{key: rc.entry.key, filter: recorder.NewFilter(opts), exp: exp}
		proc.logs.mu.Lock()
		if proc.logs.routes == nil {
			proc.logs.routes = map[string]*logRoute{}
		}
		proc.logs.routes[r.key] = r
		proc.logs.mu.Unlock()
		return r, nil
	})
	switch {
	case err == nil:
		rc.logRoute = key
	case byConfig:
		return fmt.Errorf("record otlp_logs: %w", err)
	default:
		h.logger.Error("OpenTelemetry log records are off", zap.Error(err))
	}
	return nil
}

// releaseLogs drops rc's hold on its log route, if it has one.
func releaseLogs(rc *recording) {
	if rc.logRoute != "" {
		_ = letGo(rc.logRoute)
	}
}

// logSink emits the records of routed recordings as log records. It runs on the record
// pipeline's worker, before the span sink ends the request's span (whose ids the log record
// carries).
type logSink struct{}

func (logSink) Consume(r *record.Record) {
	if r.RecordTo == "" || proc.logs.cur.Load() == nil {
		return
	}
	proc.logs.mu.RLock()
	route := proc.logs.routes[r.RecordTo]
	proc.logs.mu.RUnlock()
	if route == nil || !route.filter.Keep(r) {
		return
	}
	route.exp.l.Emit(r)
}

// logStats is the counts of every exporter of the process, stopped and running.
func logStats() otelexport.LogStats {
	st := otelexport.LogStats{Exported: proc.logs.exported.Load()}
	for i := range st.Dropped {
		st.Dropped[i] = proc.logs.dropped[i].Load()
	}
	if l := proc.logs.cur.Load(); l != nil {
		cur := l.Stats()
		st.Exported += cur.Exported
		for i, n := range cur.Dropped {
			st.Dropped[i] += n
		}
	}
	return st
}

// OTLPLogStats returns what the export of records as log records did since the process
// started: records exported and dropped by reason (otelexport.LogDropReason).
func OTLPLogStats() otelexport.LogStats { return logStats() }

var (
	descLogsExported = prometheus.NewDesc("llmtap_otlp_logs_exported_total",
		"Request records the OTLP receiver accepted as log records (record otlp_logs or OTEL_LOGS_EXPORTER).", nil, nil)
	descLogsDropped = prometheus.NewDesc("llmtap_otlp_logs_dropped_total",
		"Request records not delivered as OTLP log records (traffic, measurement and the recording files unaffected), by reason: queue_full (the export's bounded queue was full: the receiver is down or slow), export_failed (the export request failed or timed out), shutdown (still queued when the export stopped).",
		[]string{"reason"}, nil)
)

// logsCollector serves the log export's counters, every reason always present.
type logsCollector struct{}

func (logsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLogsExported
	ch <- descLogsDropped
}

func (logsCollector) Collect(ch chan<- prometheus.Metric) {
	st := logStats()
	ch <- prometheus.MustNewConstMetric(descLogsExported, prometheus.CounterValue, float64(st.Exported))
	for r, n := range st.Dropped {
		ch <- prometheus.MustNewConstMetric(descLogsDropped, prometheus.CounterValue, float64(n), otelexport.LogDropReason(r).String())
	}
}

var _ prometheus.Collector = logsCollector{}
