package process

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/export/prom"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// Recorders are held by a key made of their folder and options, and outlive config reloads: a
// reload whose recording options for a folder are unchanged keeps the same recorder (same
// files, nothing flushed early, nothing lost). A reload that changes them, or the folder,
// starts a new recorder in new files, which takes the new config's records; the old one goes
// on taking the records of the old config's streams, which hold it until they have ended,
// then writes its queue, syncs and closes. Each record travels with the key of the recorder of
// the config that measured it (its handler's pipeline.Route).
//
// The runtime recording is the one started through the API (RecordingStart): a recorder that
// receives every request the engine measures, from every handler, until RecordingStop.
//
// The recorders still open when the Process closes, the runtime recording too, are closed by
// the record pipeline's Close once it has delivered its last record (closeRecorders).

type recorders struct {
	mu    sync.RWMutex
	byKey map[string]*Recorder // the runtime recording's too, under keyRuntime
	// dropped counts records lost to recording over the process's life, by reason.
	dropped [NumDropReasons]atomic.Uint64

	runtimeMu sync.Mutex // serializes starting and stopping the runtime recording
	runtime   atomic.Pointer[Recorder]
}

// keyRuntime is the runtime recording's key in recorders.byKey.
const keyRuntime = "runtime"

// Recorder is a held recorder: Key names it in pipeline.Route.Recorder.
type Recorder struct {
	Key string
	dir string
	rec *recorder.Recorder
	p   *Process
	// started is when the runtime recording started; zero for a config's recorder.
	started time.Time

	closeOnce sync.Once
	closeErr  error
}

// DropReason says why a record did not reach the recording files: the reason label of
// llmtap_recorder_dropped_total.
type DropReason int

const (
	// DropQueueFull: the recorder's bounded queue was full.
	DropQueueFull DropReason = iota
	// DropWriteFailed: writing the record's lines failed (disk full, I/O error).
	DropWriteFailed
	// DropClosed: the record reached the pipeline after its recorder had closed.
	DropClosed
	// DropDrainTimeout: the stream was still running the drain time after its config was
	// unloaded, so its recorder had been let go.
	DropDrainTimeout
	// DropQueueBytes: the request bodies waiting for the recorder's writer held its byte
	// bound (recorder.Options.QueueBytes), so the record's trace and payload lines were left
	// out (recorder.Stats.Shed); its records line is written.
	DropQueueBytes
	// NumDropReasons is the number of reasons.
	NumDropReasons
)

func (r DropReason) String() string {
	return prom.RecorderDropReasons[r]
}

// CountDrop counts one record lost to recording.
func (p *Process) CountDrop(r DropReason) { p.rec.dropped[r].Add(1) }

// recorderKey identifies a recorder: its folder and options (every field, in Go syntax), the
// fleet key by a digest only, since the key names routes (pipeline.Route.Recorder).
func recorderKey(opts recorder.Options) string {
	sum := sha256.Sum256(opts.FleetKey)
	opts.FleetKey = nil
	return "recorder:" + fmt.Sprintf("%#v key=%x", opts, sum[:8])
}

// HoldRecorder holds the recorder of opts, starting one when none runs with the same folder
// and options; every call is paired with one Release. The caller lets the pipeline deliver the
// records of its streams before it releases.
func (p *Process) HoldRecorder(opts recorder.Options) (*Recorder, error) {
	key := recorderKey(opts)
	e, _, err := Hold(p, key, func() (*Recorder, error) { return p.openRecorder(key, opts, time.Time{}) })
	return e, err
}

// openRecorder starts a recorder with opts and routes the records of key to it.
func (p *Process) openRecorder(key string, opts recorder.Options, started time.Time) (*Recorder, error) {
	r, err := recorder.New(opts)
	if err != nil {
		return nil, err
	}
	e := &Recorder{Key: key, dir: opts.Dir, rec: r, p: p, started: started}
	p.rec.mu.Lock()
	p.rec.byKey[key] = e
	p.rec.mu.Unlock()
	return e, nil
}

// Release drops a hold; the last one closes the recorder.
func (e *Recorder) Release() { _ = e.p.LetGo(e.Key) }

// Running reports whether the recorder still takes records.
func (e *Recorder) Running() bool {
	e.p.rec.mu.RLock()
	defer e.p.rec.mu.RUnlock()
	return e.p.rec.byKey[e.Key] == e
}

// Close writes the recorder's queue, syncs and closes its files, then takes it out of
// routing, its write failures joining the process's count. It is idempotent: the last holder
// letting go and the pipeline's Close may both close it.
func (e *Recorder) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { e.closeErr = e.close(ctx) })
	return e.closeErr
}

func (e *Recorder) close(ctx context.Context) error {
	p := e.p
	log := p.Log("recorder")
	err := e.rec.Close(ctx)
	if err != nil {
		log.Error("closing the llmtap recorder", zap.String("dir", e.dir), zap.Error(err))
	}
	st := e.rec.Stats()
	p.rec.mu.Lock()
	if p.rec.byKey[e.Key] == e { // not a successor with the same key, started meanwhile
		delete(p.rec.byKey, e.Key)
	}
	p.rec.runtime.CompareAndSwap(e, nil)
	p.rec.dropped[DropWriteFailed].Add(st.Failed)
	p.rec.dropped[DropQueueBytes].Add(st.Shed)
	p.rec.mu.Unlock()
	if st.Errors > 0 {
		log.Error("the llmtap recorder failed to write some records", zap.String("dir", e.dir),
			zap.Uint64("errors", st.Errors), zap.Uint64("records_failed", st.Failed))
	}
	return err
}

// closeRecorders closes the recorders still open, the runtime recording's too; the pipeline's
// Close calls it after its last record, and waits for them up to closeTimeout.
func (p *Process) closeRecorders(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	p.rec.mu.RLock()
	open := slices.Collect(maps.Values(p.rec.byKey))
	p.rec.mu.RUnlock()
	var errs []error
	for _, e := range open {
		errs = append(errs, e.Close(ctx))
	}
	return errors.Join(errs...)
}

// record routes a finalized record to the recorder of its config and to the runtime
// recording. It runs on the record pipeline's worker, before the pipeline drops the request
// body.
func (p *Process) record(x pipeline.Routed) {
	r, tok := x.Record, x.Route.Tokens
	if e := p.rec.runtime.Load(); e != nil && !e.rec.Submit(r, tok) {
		p.CountDrop(DropQueueFull)
	}
	if x.Route.Recorder == "" {
		return
	}
	p.rec.mu.RLock()
	e := p.rec.byKey[x.Route.Recorder]
	p.rec.mu.RUnlock()
	switch {
	case e == nil:
		p.CountDrop(DropClosed)
	case !e.rec.Submit(r, tok):
		p.CountDrop(DropQueueFull)
	}
}

// RecorderDrops returns the records lost to recording since the process started, by reason:
// the counts of closed recorders and those of the running ones.
func (p *Process) RecorderDrops() [NumDropReasons]uint64 {
	var n [NumDropReasons]uint64
	p.rec.mu.RLock()
	for r := range n {
		n[r] = p.rec.dropped[r].Load()
	}
	for _, e := range p.rec.byKey {
		st := e.rec.Stats()
		n[DropWriteFailed] += st.Failed
		n[DropQueueBytes] += st.Shed
	}
	p.rec.mu.RUnlock()
	return n
}

// recorderDropped is the number of records lost to recording since the process started.
func (p *Process) recorderDropped() uint64 {
	var sum uint64
	for _, n := range p.RecorderDrops() {
		sum += n
	}
	return sum
}

// RecordingDirs returns the folders recorders write to now, with their recorders' options.
func (p *Process) RecordingDirs() map[string]recorder.Options {
	p.rec.mu.RLock()
	defer p.rec.mu.RUnlock()
	dirs := make(map[string]recorder.Options, len(p.rec.byKey))
	for _, e := range p.rec.byKey {
		dirs[e.dir] = e.rec.Options()
	}
	return dirs
}

// startRecording starts the runtime recording in req.Dir, with the options plan makes.
func (p *Process) startRecording(req *llmtapv1.RecordingStartRequest, plan func(*llmtapv1.RecordingStartRequest) (recorder.Options, error)) (*llmtapv1.Recording, error) {
	if req.GetDir() == "" {
		return nil, fmt.Errorf("%w: dir is required: the folder to write the recording to", api.ErrInvalid)
	}
	if s := req.GetSample(); s < 0 || s > 1 {
		return nil, fmt.Errorf("%w: sample %v: want a fraction in (0, 1], 0 meaning 1", api.ErrInvalid, s)
	}
	opts, err := plan(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrInvalid, err)
	}
	p.rec.runtimeMu.Lock()
	defer p.rec.runtimeMu.Unlock()
	if e := p.rec.runtime.Load(); e != nil {
		return nil, fmt.Errorf("%w: a recording started through the API is already writing to %s; stop it first", api.ErrState, e.rec.Options().Dir)
	}
	if _, configured := p.RecordingDirs()[opts.Dir]; configured {
		return nil, fmt.Errorf("%w: the loaded config already records to %s; choose another folder", api.ErrState, opts.Dir)
	}
	e, err := p.openRecorder(keyRuntime, opts, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%w: starting the recorder in %s: %v", api.ErrInvalid, opts.Dir, err)
	}
	p.rec.runtime.Store(e)
	return api.RecordingProto(e.rec, "runtime", e.started), nil
}

// stopRecording stops the runtime recording.
func (p *Process) stopRecording(ctx context.Context) (*llmtapv1.Recording, error) {
	p.rec.runtimeMu.Lock()
	defer p.rec.runtimeMu.Unlock()
	e := p.rec.runtime.Swap(nil)
	if e == nil {
		return nil, fmt.Errorf("%w: no recording started through the API is running", api.ErrState)
	}
	p.tap.Flush() // records already in the pipeline reach the recorder before it closes
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	_ = e.rec.Flush(ctx)
	pr := api.RecordingProto(e.rec, "runtime", e.started)
	if err := e.Close(ctx); err != nil {
		return nil, fmt.Errorf("closing the recording in %s: %w", pr.Dir, err)
	}
	st := e.rec.Stats()
	pr.Written, pr.Dropped, pr.Filtered, pr.Errors = st.Written, st.Dropped+st.Failed+st.Shed, st.Filtered, st.Errors
	return pr, nil
}

// recordingStatus lists the runtime recording, then the configured recorders by folder.
func (p *Process) recordingStatus() []*llmtapv1.Recording {
	var out []*llmtapv1.Recording
	if e := p.rec.runtime.Load(); e != nil {
		out = append(out, api.RecordingProto(e.rec, "runtime", e.started))
	}
	p.rec.mu.RLock()
	recs := slices.DeleteFunc(slices.Collect(maps.Values(p.rec.byKey)), func(e *Recorder) bool { return e.Key == keyRuntime })
	p.rec.mu.RUnlock()
	slices.SortFunc(recs, func(a, b *Recorder) int { return strings.Compare(a.dir, b.dir) })
	for _, e := range recs {
		out = append(out, api.RecordingProto(e.rec, "config", time.Time{}))
	}
	return out
}

// Request records as OpenTelemetry log records (RecordConfig.OTLPLogs, or OTEL_LOGS_EXPORTER
// for every recording): a recording whose config asks for them gets a log route, held under
// keyLogRoute and its recorder's key, that keeps what its recorder keeps (recorder.Filter:
// routes, models, sampling). Every route holds the process's one exporter
// (otel.RequestLogs, under keyLogs), which starts with the first route and flushes and
// stops when the last one lets go. The log sink, beside the record sink, hands each record of
// a routed recording to the exporter's bounded queue; nothing waits for the network.
//
// Two configs whose recordings share a folder and options share one recorder and so one
// route: when either asks for log records, the requests of both are exported.

const (
	keyLogs     = "otellogs"
	keyLogRoute = "otellogs:"
)

// logsState is the process's log export state.
type logsState struct {
	mu     sync.RWMutex
	routes map[string]*logRoute // by recorder key (pipeline.Route.Recorder)
	// cur is the running exporter, nil when none runs.
	cur atomic.Pointer[otel.RequestLogs]
	// exported and dropped are the counts of the exporters that have stopped.
	exported atomic.Uint64
	dropped  [otel.NumLogDropReasons]atomic.Uint64
}

// logsExporter is the process's exporter, a held runner.
type logsExporter struct {
	l *otel.RequestLogs
	p *Process
}

// Close flushes what is queued (until ctx ends), stops the exporter and keeps its counts.
func (e *logsExporter) Close(ctx context.Context) error {
	p := e.p
	p.logs.cur.CompareAndSwap(e.l, nil)
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

// Close takes the route out of the sink's table and lets go of the exporter.
func (r *logRoute) Close(context.Context) error {
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
			l, err := otel.NewLogs(ctx, otel.LogsOptions{})
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

// emitLog emits the records of routed recordings as log records. It runs on the record
// pipeline's worker, before the span sink ends the request's span (whose ids the log record
// carries).
func (p *Process) emitLog(x pipeline.Routed) {
	if x.Route.Recorder == "" || p.logs.cur.Load() == nil {
		return
	}
	p.logs.mu.RLock()
	route := p.logs.routes[x.Route.Recorder]
	p.logs.mu.RUnlock()
	if route == nil || !route.filter.Keep(x.Record) {
		return
	}
	route.exp.l.Emit(x.Record, x.Span)
}

// OTLPLogStats returns what the export of records as log records did since the process
// started: records exported and dropped by reason (otel.LogDropReason).
func (p *Process) OTLPLogStats() otel.LogStats {
	st := otel.LogStats{Exported: p.logs.exported.Load()}
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
