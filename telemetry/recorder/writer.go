package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// kinds in the order of writer.files.
var kinds = [...]string{recfile.KindRecords, recfile.KindTrace, recfile.KindPayloads}

// writer is the state of the writer goroutine: the open files and the scratch buffers. Only
// that goroutine touches it, except paths (under mu) and closeErr (read after done).
type writer struct {
	rec   *Recorder
	opts  Options
	on    [len(kinds)]bool
	files [len(kinds)]*file
	// pq writes the records and trace when Options.Format is FormatParquet (on[0] and on[1]
	// are then off: files holds only the payloads).
	pq *pqFiles

	ids  *prefixIDs
	red  redactor
	line []byte
	hash []int64
	enc  *json.Encoder
	buf  bytes.Buffer

	mu    sync.Mutex
	paths []string

	// pending counts the records whose lines are in the files' buffers, not yet handed to
	// the operating system: the next flush counts them written (shed when only their
	// records line was written: pendingShed), or failed.
	pending, pendingShed uint64
	// retry is when a new file of each kind may be opened after a failure, and backoff the
	// wait that set it (doubling from minBackoff to maxBackoff while failures go on).
	retry   [len(kinds)]time.Time
	backoff [len(kinds)]time.Duration
	// create makes a new file and now reads the clock for the back-off (tests replace both).
	create func(dir, kind string, start time.Time) (sink, error)
	now    func() time.Time

	closeErr error
}

// The back-off after a failed write: no new file of that kind is opened for minBackoff, then
// twice as long after each further failure, up to maxBackoff. Records meanwhile are counted as
// failed; the proxy goes on serving.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

func newWriter(r *Recorder) (*writer, error) {
	w := &writer{
		rec:    r,
		opts:   r.opts,
		on:     [len(kinds)]bool{r.opts.Records, r.opts.Trace, r.opts.Payloads},
		ids:    newPrefixIDs(r.opts.FleetKey),
		red:    redactor{rules: r.opts.Redact, max: r.opts.MaxBodyBytes},
		create: createSink,
		now:    time.Now,
	}
	w.enc = json.NewEncoder(&w.buf)
	if r.opts.Format == FormatParquet {
		pq, err := newPQFiles(r.opts)
		if err != nil {
			return nil, err
		}
		w.pq, w.on[0], w.on[1] = pq, false, false
	}
	now := time.Now()
	for k := range kinds {
		if !w.on[k] {
			continue
		}
		if err := w.open(k, now); err != nil {
			w.closeFiles()
			return nil, err
		}
	}
	return w, nil
}

// run is the writer goroutine: it writes queued records, flushes every FlushEvery, rotates by
// age, and on Close drains the queue and closes the files.
func (w *writer) run() {
	defer close(w.rec.done)
	t := time.NewTicker(w.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case j := <-w.rec.ch:
			w.handle(j)
		case now := <-t.C:
			w.tick(now)
		case <-w.rec.closing:
			for {
				select {
				case j := <-w.rec.ch:
					w.handle(j)
				default:
					w.closeErr = w.closeFiles()
					return
				}
			}
		}
	}
}

func (w *writer) handle(j job) {
	if j.flush != nil {
		w.flushAll()
		close(j.flush)
		return
	}
	ok := w.write(j)
	w.rec.bodyBytes.Add(-j.bytes())
	switch {
	case !ok:
		w.rec.failed.Add(1)
	case j.shed:
		w.pendingShed++
	default:
		w.pending++
	}
}

// tick flushes what was written since the last tick and rotates files that are too old.
func (w *writer) tick(now time.Time) {
	w.flushAll()
	if w.pq != nil {
		w.check(w.pq.tick(now))
		w.setPaths()
	}
	w.rec.sess.sweep(now)
	for k, f := range w.files {
		if f != nil && w.opts.tooOld(f.start, now) {
			w.rotate(k)
		}
	}
}

// flushAll hands every file's buffer to the operating system and settles the pending
// records: written when every flush succeeded, failed otherwise.
func (w *writer) flushAll() {
	ok := true
	for k, f := range w.files {
		if f == nil {
			continue
		}
		if !w.check(f.flush()) {
			ok = false
			w.drop(k)
		} else if f.flushed > 0 {
			w.backoff[k] = 0 // the disk takes writes again
		}
	}
	if w.pq != nil {
		w.setPaths()
	}
	w.settle(ok)
}

// settle counts the pending records written (ok) or failed.
func (w *writer) settle(ok bool) {
	if w.pending+w.pendingShed == 0 {
		return
	}
	if ok {
		w.rec.written.Add(w.pending)
		w.rec.shed.Add(w.pendingShed)
	} else {
		w.rec.failed.Add(w.pending + w.pendingShed)
	}
	w.pending, w.pendingShed = 0, 0
}

// write encodes the job's record into every enabled file (only the records file when shed)
// and reports whether every line was taken.
func (w *writer) write(j job) bool {
	r, body, t := j.r, j.body, j.turn
	// A file this record opens (the first, or one after a rotation) starts at the record's
	// arrival, not at the moment the pipeline got to it: under load that moment can be after
	// later requests arrived, and their merged order across instances would be wrong.
	now := time.Now()
	if !r.Start.IsZero() && r.Start.Before(now) {
		now = r.Start
	}
	ok := true
	if w.pq != nil && w.pq.records != nil {
		ok = w.check(w.pq.writeRecord(now, r))
	}
	if w.on[0] {
		ok = w.put(0, now, func(*file) []byte {
			w.buf.Reset()
			_ = w.enc.Encode(r) // a record always encodes
			return w.buf.Bytes()
		})
	}
	if r.Class == record.ClassMirror || j.shed {
		// A mirror is a copy of a live request the trace and the payloads hold already; a shed
		// record's body was not kept (Options.QueueBytes).
		return ok
	}
	if w.pq != nil && w.pq.trace != nil {
		ok = w.check(w.pq.writeTrace(now, r, w.hashIDs(j), t)) && ok
	}
	if w.on[1] {
		w.hash = w.hashIDs(j)
		ok = w.put(1, now, func(f *file) []byte {
			l := trace.TraceLine{Timestamp: us(r.Start.Sub(f.start)), InputLength: r.InputTokens, OutputLength: r.OutputTokens,
				HashIDs: w.hash, Session: t, Tenant: r.Tenant}
			l.Session.Delay = us(t.Delay)
			if r.Model != record.UnknownModel {
				l.Model = r.Model
			}
			w.line = trace.AppendTraceLine(w.line[:0], &l)
			return w.line
		}) && ok
	}
	if w.on[2] {
		p, err := w.red.payload(body)
		if err != nil {
			w.rec.skip(skipReason(err))
			return ok
		}
		ok = w.put(2, now, func(f *file) []byte {
			w.line = trace.AppendPayloadLine(w.line[:0], &trace.PayloadLine{Timestamp: r.Start.Sub(f.start),
				RequestID: r.RequestID, Path: r.Path, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Session: t, Body: p})
			return w.line
		}) && ok
	}
	return ok
}

// us is d truncated to the microsecond: the precision of the recorder's trace times.
func us(d time.Duration) time.Duration { return d.Truncate(time.Microsecond) }

// hashIDs returns the chained block ids of the job's prompt, exactly trace.Blocks(input tokens) of
// them: of the token ids that counted its input tokens, else of the prompt of its body
// tokenized with the tokenizer that counted the record's tokens (the handler's, job.tok;
// o200k_base when none).
func (w *writer) hashIDs(j job) []int64 {
	r := j.r
	want := trace.Blocks(int(r.InputTokens), trace.BlockTokens)
	if want == 0 {
		return w.hash[:0]
	}
	toks := j.ids
	if toks == nil && len(j.body) > 0 {
		req := decode.ParseRequestFor(r.API, j.body, len(j.body))
		var c tokens.Counter = tokens.Default
		if j.tok != nil {
			c = j.tok
		}
		toks, _ = tokens.IDsWith(c, req.Prompt) // on error the ids are all fresh
	}
	return w.ids.assign(w.hash[:0], toks, want)
}

// put writes the line encode makes for the file of kind k. When the line would take the file
// past RotateBytes, the file is rotated and the line encoded again for the new one (its
// timestamps are relative to the file). It reports whether the line was taken.
func (w *writer) put(k int, now time.Time, encode func(*file) []byte) bool {
	f := w.ensure(k, now)
	if f == nil {
		return false
	}
	line := encode(f)
	if w.opts.tooBig(f.size, len(line)) {
		w.rotate(k)
		if f = w.ensure(k, now); f == nil {
			return false
		}
		line = encode(f)
	}
	if !w.check(f.write(line)) {
		w.drop(k)
		return false
	}
	return true
}

// ensure returns the open file of kind k, opening a new one when the last was rotated away or
// failed — after a failure, only once the back-off has passed.
func (w *writer) ensure(k int, now time.Time) *file {
	if w.files[k] == nil {
		if w.now().Before(w.retry[k]) {
			return nil
		}
		if !w.check(w.open(k, now)) {
			w.fail(k)
			return nil
		}
	}
	return w.files[k]
}

// fail starts or lengthens the back-off of kind k after a failed write or open.
func (w *writer) fail(k int) {
	w.backoff[k] = min(max(2*w.backoff[k], minBackoff), maxBackoff)
	w.retry[k] = w.now().Add(w.backoff[k])
}

func (w *writer) open(k int, now time.Time) error {
	f, err := openFile(w.create, w.opts.Dir, kinds[k], now)
	if err != nil {
		return err
	}
	w.files[k] = f
	w.setPaths()
	return nil
}

// rotate closes the file of kind k; the next line opens a new one.
func (w *writer) rotate(k int) {
	if f := w.files[k]; f != nil {
		if !w.check(f.close()) {
			w.settle(false)
			w.fail(k)
		}
		w.files[k] = nil
		w.setPaths()
	}
}

// drop abandons a file after a failed write or flush: the records whose lines were still in
// its buffer are counted failed, a file that never received a byte is removed, and the next
// line tries a new file once the back-off has passed.
func (w *writer) drop(k int) {
	if f := w.files[k]; f != nil {
		_ = f.f.Close()
		if f.flushed == 0 {
			_ = os.Remove(f.path)
		}
		w.files[k] = nil
		w.setPaths()
	}
	w.settle(false)
	w.fail(k)
}

func (w *writer) closeFiles() error {
	var errs []error
	for k, f := range w.files {
		if f != nil {
			errs = append(errs, f.close())
			w.files[k] = nil
		}
	}
	if w.pq != nil {
		errs = append(errs, w.pq.close())
	}
	w.setPaths()
	err := errors.Join(errs...)
	w.settle(err == nil)
	return err
}

// check counts err and reports whether there was none.
func (w *writer) check(err error) bool {
	if err != nil {
		w.rec.errs.Add(1)
		return false
	}
	return true
}

func (w *writer) setPaths() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paths = w.paths[:0]
	for _, f := range w.files {
		if f != nil {
			w.paths = append(w.paths, f.path)
		}
	}
	if w.pq != nil {
		w.paths = append(w.paths, w.pq.paths()...)
	}
}
