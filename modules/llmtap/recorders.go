package llmtap

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// Recorders are one per folder per process and, like the measurement engine, outlive config
// reloads: a reload whose recording options for a folder are unchanged keeps the same recorder
// (same files, nothing flushed early, nothing lost). A reload that changes them starts a new
// recorder in new files, which takes every record routed to the folder from then on; the old
// one writes what it has queued, syncs and closes when the old config is cleaned up. Records
// carry the folder (record.RecordTo), not the recorder, so one still in the pipeline during a
// reload reaches whichever recorder holds the folder.
var (
	recordersMu sync.RWMutex
	recorders   = map[string]*recorderEntry{}

	// recorderDropped counts records lost to recording over the process's life: a recorder's
	// full queue, or a record whose folder had no recorder any more. Per-recorder counters
	// restart with each recorder; this one survives reloads.
	recorderDropped atomic.Uint64
)

// recorderCloseTimeout bounds how long releasing a recorder waits for its last writes.
const recorderCloseTimeout = 10 * time.Second

type recorderEntry struct {
	dir  string
	opts recorder.Options
	rec  *recorder.Recorder
	refs int // under recordersMu
}

// acquireRecorder returns the recorder of opts.Dir, starting one when there is none or when
// its options differ.
func acquireRecorder(opts recorder.Options) (*recorderEntry, error) {
	recordersMu.Lock()
	defer recordersMu.Unlock()
	if e := recorders[opts.Dir]; e != nil && reflect.DeepEqual(e.opts, opts) {
		e.refs++
		return e, nil
	}
	r, err := recorder.New(opts)
	if err != nil {
		return nil, err
	}
	e := &recorderEntry{dir: opts.Dir, opts: opts, rec: r, refs: 1}
	recorders[opts.Dir] = e
	return e, nil
}

// releaseRecorder drops a hold; the last one lets the pipeline deliver what it holds for the
// folder, then closes the recorder (writing its queue, syncing its files).
func releaseRecorder(e *recorderEntry, logger *zap.Logger) {
	recordersMu.Lock()
	e.refs--
	last := e.refs == 0
	recordersMu.Unlock()
	if !last {
		return
	}
	if t := activeTap(); t != nil {
		t.Flush()
	}
	recordersMu.Lock()
	if recorders[e.dir] == e {
		delete(recorders, e.dir)
	}
	recordersMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), recorderCloseTimeout)
	defer cancel()
	if err := e.rec.Close(ctx); err != nil && logger != nil {
		logger.Error("closing the llmtap recorder", zap.String("dir", e.dir), zap.Error(err))
	}
	if st := e.rec.Stats(); st.Errors > 0 && logger != nil {
		logger.Error("the llmtap recorder failed to write some records", zap.String("dir", e.dir), zap.Uint64("errors", st.Errors))
	}
}

// recordSink routes finalized records to the recorder of their folder. It runs on the record
// pipeline's worker, before the pipeline drops the request body.
type recordSink struct{}

func (recordSink) Consume(r *record.Record) {
	submitRuntime(r) // the recording started through the API, if any (connect_recording.go)
	if r.RecordTo == "" {
		return
	}
	recordersMu.RLock()
	e := recorders[r.RecordTo]
	recordersMu.RUnlock()
	if e == nil || !e.rec.Submit(r) {
		recorderDropped.Add(1)
	}
}

// RecorderDropped is the number of records lost to recording since the process started.
func RecorderDropped() uint64 { return recorderDropped.Load() }

var metricRecorderDropped = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "llmtap_recorder_dropped_total",
	Help: "Measured requests not written to the recording files because the recorder's queue was full (traffic and measurement unaffected).",
}, func() float64 { return float64(recorderDropped.Load()) })

// registerRecorderMetrics registers the recorder's collectors in reg, tolerating ones already
// there.
func registerRecorderMetrics(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(metricRecorderDropped); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}
