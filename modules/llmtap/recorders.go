package llmtap

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// Recorders are held in proc.pool (lifetimes.go) under a key made of their folder and
// options, and like the measurement engine they outlive config reloads: a reload whose
// recording options for a folder are unchanged keeps the same recorder (same files, nothing
// flushed early, nothing lost). A reload that changes them, or the folder, starts a new
// recorder in new files, which takes the new config's records; the old one goes on taking the
// records of the old config's streams, which hold it until they have ended (Handler.Cleanup,
// bounded by drainTimeout), then writes its queue, syncs and closes. Each record carries the
// key of the recorder of the config that measured it (record.RecordTo).

// recorderCloseTimeout bounds how long closing a recorder waits for its last writes.
const recorderCloseTimeout = 10 * time.Second

type recorderEntry struct {
	key string
	dir string
	rec *recorder.Recorder
}

// dropReason says why a record did not reach the recording files: the reason label of
// llmtap_recorder_dropped_total.
type dropReason int

const (
	// dropQueueFull: the recorder's bounded queue was full.
	dropQueueFull dropReason = iota
	// dropWriteFailed: writing the record's lines failed (disk full, I/O error).
	dropWriteFailed
	// dropClosed: the record reached the pipeline after its recorder had closed.
	dropClosed
	// dropDrainTimeout: the stream was still running drainTimeout after its config was
	// unloaded, so its recorder and engine had been let go.
	dropDrainTimeout
	// dropQueueBytes: the request bodies waiting for the recorder's writer held its byte
	// bound (recorder.Options.QueueBytes), so the record's trace and payload lines were left
	// out (recorder.Stats.Shed); its records line is written.
	dropQueueBytes
	numDropReasons
)

func (r dropReason) String() string {
	return [numDropReasons]string{"queue_full", "write_failed", "recorder_closed", "drain_timeout", "queue_bytes"}[r]
}

// countDrop counts one record lost to recording.
func countDrop(r dropReason) { proc.recDropped[r].Add(1) }

// recorderKey identifies a recorder: its folder and options (every field, in Go syntax), the
// fleet key by a digest only, since the key names records (record.Record.RecordTo).
func recorderKey(opts recorder.Options) string {
	sum := sha256.Sum256(opts.FleetKey)
	opts.FleetKey = nil
	return keyRecorder + fmt.Sprintf("%#v key=%x", opts, sum[:8])
}

// acquireRecorder holds the recorder of opts, starting one when none runs with the same
// folder and options; every call is paired with one releaseRecorder.
func acquireRecorder(opts recorder.Options) (*recorderEntry, error) {
	key := recorderKey(opts)
	e, _, err := hold(key, func() (*recorderEntry, error) {
		r, err := recorder.New(opts)
		if err != nil {
			return nil, err
		}
		e := &recorderEntry{key: key, dir: opts.Dir, rec: r}
		proc.recMu.Lock()
		proc.recorders[key] = e
		proc.recMu.Unlock()
		return e, nil
	})
	return e, err
}

// releaseRecorder drops a hold; the last one closes the recorder. The caller has let the
// pipeline deliver the records of its streams first.
func releaseRecorder(e *recorderEntry) { _ = letGo(e.key) }

// Destruct writes the recorder's queue, syncs and closes its files, then takes it out of
// routing, its write failures joining the process's count. Every holder has let the pipeline
// deliver its records before letting go, so none is on its way here.
func (e *recorderEntry) Destruct() error {
	ctx, cancel := context.WithTimeout(context.Background(), recorderCloseTimeout)
	defer cancel()
	log := logger("recorder")
	err := e.rec.Close(ctx)
	if err != nil {
		log.Error("closing the llmtap recorder", zap.String("dir", e.dir), zap.Error(err))
	}
	st := e.rec.Stats()
	proc.recMu.Lock()
	if proc.recorders[e.key] == e { // not a successor with the same key, started meanwhile
		delete(proc.recorders, e.key)
	}
	proc.recDropped[dropWriteFailed].Add(st.Failed)
	proc.recDropped[dropQueueBytes].Add(st.Shed)
	proc.recMu.Unlock()
	if st.Errors > 0 {
		log.Error("the llmtap recorder failed to write some records", zap.String("dir", e.dir),
			zap.Uint64("errors", st.Errors), zap.Uint64("records_failed", st.Failed))
	}
	return err
}

// recordSink routes finalized records to the recorder of their config. It runs on the record
// pipeline's worker, before the pipeline drops the request body.
type recordSink struct{}

func (recordSink) Consume(r *record.Record) {
	submitRuntime(r) // the recording started through the API, if any (connect_recording.go)
	if r.RecordTo == "" {
		return
	}
	proc.recMu.RLock()
	e := proc.recorders[r.RecordTo]
	proc.recMu.RUnlock()
	switch {
	case e == nil:
		countDrop(dropClosed)
	case !e.rec.Submit(r):
		countDrop(dropQueueFull)
	}
}

// recorderDrops returns the records lost to recording since the process started, by reason:
// the counts of closed recorders and those of the running ones.
func recorderDrops() [numDropReasons]uint64 {
	var n [numDropReasons]uint64
	proc.recMu.RLock()
	for r := range n {
		n[r] = proc.recDropped[r].Load()
	}
	for _, e := range proc.recorders {
		st := e.rec.Stats()
		n[dropWriteFailed] += st.Failed
		n[dropQueueBytes] += st.Shed
	}
	proc.recMu.RUnlock()
	if e := proc.runtimeRec.Load(); e != nil {
		st := e.rec.Stats()
		n[dropWriteFailed] += st.Failed
		n[dropQueueBytes] += st.Shed
	}
	return n
}

// RecorderDropped is the number of records lost to recording since the process started.
func RecorderDropped() uint64 {
	var sum uint64
	for _, n := range recorderDrops() {
		sum += n
	}
	return sum
}

var descRecorderDropped = prometheus.NewDesc("llmtap_recorder_dropped_total",
	"Measured requests not written to the recording files (traffic and measurement unaffected), by reason: queue_full (the recorder's bounded queue was full), write_failed (writing failed: disk full, I/O error), recorder_closed (the record came after its recorder closed), drain_timeout (the stream outlived its unloaded config by more than the drain time), queue_bytes (the request bodies waiting for the writer held its byte bound, so the record's trace and payload lines were left out; its records line is written).",
	[]string{"reason"}, nil)

// recorderCollector serves llmtap_recorder_dropped_total, every reason always present.
type recorderCollector struct{}

func (recorderCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRecorderDropped }

func (recorderCollector) Collect(ch chan<- prometheus.Metric) {
	for r, n := range recorderDrops() {
		ch <- prometheus.MustNewConstMetric(descRecorderDropped, prometheus.CounterValue, float64(n), dropReason(r).String())
	}
}

var _ prometheus.Collector = recorderCollector{}
