package recorder

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Stats count what a Recorder did with the records it was offered.
type Stats struct {
	// Written is the number of records written (each to every file enabled) and handed to the
	// operating system: a record counts once the flush that follows its lines succeeded.
	Written uint64 `json:"written"`
	// Dropped is the number of records lost because the queue was full or the recorder was
	// closed: the requests passed, but they are missing from the files.
	Dropped uint64 `json:"dropped"`
	// Shed is the number of records whose trace and payload lines were left out because
	// Options.QueueBytes of request bodies were waiting for the writer (it fell behind
	// tokenizing long prompts): their records line is written when the records file is on
	// (and counted here once handed to the operating system, in Failed if that failed).
	// Counted apart from Written and Dropped.
	Shed uint64 `json:"shed,omitempty"`
	// Failed is the number of records lost because writing them failed (a full disk, an I/O
	// error): the line, or the flush that was to hand it to the operating system, failed.
	// The writer then backs off before it opens a new file (see writer.fail). Counted apart
	// from Written and Dropped.
	Failed uint64 `json:"failed"`
	// Filtered is the number of records left out on purpose (routes, models, sampling).
	Filtered uint64 `json:"filtered"`
	// SkippedPayloads counts bodies not written to the payload file: over the cap, or not a
	// complete JSON object (cut at capture, or not JSON).
	SkippedPayloads uint64 `json:"skipped_payloads"`
	// SkippedTooLarge and SkippedNotObject split SkippedPayloads by reason (SkipTooLarge,
	// SkipNotObject).
	SkippedTooLarge  uint64 `json:"skipped_payloads_too_large"`
	SkippedNotObject uint64 `json:"skipped_payloads_not_object"`
	// Errors counts failed file operations (the record's lines may be missing).
	Errors uint64 `json:"errors"`
	// SessionsUntracked counts sessions that started while Options.MaxSessions sessions were
	// remembered: their next turn was written without its think time (delay).
	SessionsUntracked uint64 `json:"sessions_untracked"`
	// SessionsExpired counts sessions forgotten after Options.SessionIdle without a turn.
	SessionsExpired uint64 `json:"sessions_expired"`
}

// skip counts a body left out of the payload file for reason (SkipTooLarge, SkipNotObject),
// here and in the process's totals (ProcessPayloadsSkipped).
func (r *Recorder) skip(reason string) {
	r.skipped.Add(1)
	if reason == SkipTooLarge {
		r.skippedTooLarge.Add(1)
		processSkipped.tooLarge.Add(1)
	} else {
		r.skippedNotObject.Add(1)
		processSkipped.notObject.Add(1)
	}
}

// processSkipped are the payload skips of every recorder of the process, closed ones
// included, so that the counter served to Prometheus never goes down on a config reload.
var processSkipped struct{ tooLarge, notObject atomic.Uint64 }

// ProcessPayloadsSkipped returns the request bodies every recorder of the process left out
// of its payload file since the process started, by reason.
func ProcessPayloadsSkipped() (tooLarge, notObject uint64) {
	return processSkipped.tooLarge.Load(), processSkipped.notObject.Load()
}

// job is one record for the writer, with the request body it needs (the pipeline drops the
// record's reference after the sinks ran), or a flush request.
type job struct {
	r     *record.Record
	tok   tokens.Counter // the tokenizer that counted r's tokens; nil: o200k_base
	body  []byte
	ids   []uint // the prompt's token ids, when the tokenizer counted them (record.PromptIDs)
	turn  trace.Session
	shed  bool // the body did not fit Options.QueueBytes: only the records line is written
	flush chan struct{}
}

// Recorder writes records to files off the request path. Submit is safe for
// concurrent use and never block.
//
// Lines are written by one goroutine; a Recorder holds at most Options.Queue records waiting
// for it, and at most Options.QueueBytes of their request bodies.
type Recorder struct {
	opts   Options
	filter *filter
	sess   *sessions
	ch     chan job

	mu     sync.RWMutex // held for reading while queuing; Close takes it to stop queuing
	closed bool

	// bodyBytes is the sum of the request bodies queued for the writer (Options.QueueBytes).
	bodyBytes atomic.Int64

	written, dropped, shed, failed, filtered, skipped, errs atomic.Uint64
	skippedTooLarge, skippedNotObject                       atomic.Uint64

	closeOnce sync.Once
	closing   chan struct{}
	done      chan struct{}

	w *writer // owned by the writer goroutine after New
}

// New creates the folder, opens the first files (so a folder that cannot be written to fails
// here, not on the first request) and starts the writer goroutine; Close stops it.
func New(opts Options) (*Recorder, error) {
	r, err := newRecorder(opts)
	if err != nil {
		return nil, err
	}
	go r.w.run()
	return r, nil
}

// newRecorder is New without starting the writer goroutine, so tests can fill the queue.
func newRecorder(opts Options) (*Recorder, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := makeDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("creating the recording folder: %w", err)
	}
	r := &Recorder{
		opts:    opts,
		filter:  newFilter(opts),
		sess:    newSessions(opts.MaxSessions, opts.SessionIdle),
		ch:      make(chan job, opts.Queue),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	w, err := newWriter(r)
	if err != nil {
		return nil, err
	}
	r.w = w
	return r, nil
}

// Options returns the options in effect, defaults filled in.
func (r *Recorder) Options() Options { return r.opts }

// Submit queues a finalized record whose tokens c counted (its handler's tokenizer; nil:
// o200k_base) for writing without blocking: the trace's hash_ids are cut from its prompt's
// token ids (record.PromptIDs), or, when the server reported its input tokens, from c's
// tokens of its prompt. It reports false when the record was dropped (queue full, recorder
// closed), true when it was queued, shed (its body did not fit Options.QueueBytes) or
// filtered out on purpose; all are counted in Stats. The record must not be modified
// afterwards, but for its RequestBody and PromptIDs, which are kept by reference when it is
// queued with the record.
func (r *Recorder) Submit(rec *record.Record, c tokens.Counter) bool {
	t := trace.Session{ID: rec.SessionID}
	t.Delay, t.HasDelay = r.sess.turn(rec) // every turn, kept or not, ends the previous one
	if !r.filter.keep(rec) {
		r.filtered.Add(1)
		return true
	}
	j := job{r: rec, tok: c, turn: t}
	if (r.opts.Trace || r.opts.Payloads) && rec.Class != record.ClassMirror && len(rec.RequestBody) > 0 {
		// A mirror's copy writes only its records line (see writer.write): its body is not held.
		j.body = rec.RequestBody
		if r.opts.Trace {
			j.ids = rec.PromptIDs
		}
		if n := j.bytes(); r.bodyBytes.Add(n) > r.opts.QueueBytes {
			r.bodyBytes.Add(-n)
			j.body, j.ids, j.shed = nil, nil, true
			if !r.opts.Records {
				r.shed.Add(1) // nothing of it is left to write
				return true
			}
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.closed {
		select {
		case r.ch <- j:
			return true
		default:
		}
	}
	r.bodyBytes.Add(-j.bytes())
	r.dropped.Add(1)
	return false
}

// bytes is what the job holds against Options.QueueBytes: its body and its token ids.
func (j job) bytes() int64 { return int64(len(j.body) + 8*len(j.ids)) }

// Flush waits until every record queued before the call is written and handed to the
// operating system, or ctx ends. It is for tests and shutdown; it blocks.
func (r *Recorder) Flush(ctx context.Context) error {
	done := make(chan struct{})
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return nil
	}
	select {
	case r.ch <- job{flush: done}:
		r.mu.RUnlock()
	case <-ctx.Done():
		r.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the counters so far.
func (r *Recorder) Stats() Stats {
	return Stats{
		Written:          r.written.Load(),
		Dropped:          r.dropped.Load(),
		Shed:             r.shed.Load(),
		Failed:           r.failed.Load(),
		Filtered:         r.filtered.Load(),
		SkippedPayloads:  r.skipped.Load(),
		SkippedTooLarge:  r.skippedTooLarge.Load(),
		SkippedNotObject: r.skippedNotObject.Load(),
		Errors:           r.errs.Load(),

		SessionsUntracked: r.sess.untracked.Load(),
		SessionsExpired:   r.sess.expired.Load(),
	}
}

// QueuedBodyBytes is the sum of the request bodies waiting for the writer, at most
// Options.QueueBytes.
func (r *Recorder) QueuedBodyBytes() int64 { return r.bodyBytes.Load() }

// Files returns the paths of the files open now, for logs and tests. It is only accurate
// after Flush, and nil once closed.
func (r *Recorder) Files() []string {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return append([]string(nil), r.w.paths...)
}

// Close stops queuing, writes what is queued, syncs and closes the files, and joins the writer
// goroutine, or gives up waiting when ctx ends (the writer still finishes). It is idempotent.
func (r *Recorder) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.closing)
	})
	select {
	case <-r.done:
		return r.w.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}
