package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// kinds in the order of writer.files.
var kinds = [...]string{KindRecords, KindTrace, KindPayloads}

// writer is the state of the writer goroutine: the open files and the scratch buffers. Only
// that goroutine touches it, except paths (under mu) and closeErr (read after done).
type writer struct {
	rec   *Recorder
	opts  Options
	on    [len(kinds)]bool
	files [len(kinds)]*file

	ids  *prefixIDs
	red  redactor
	line []byte
	hash []int64
	enc  *json.Encoder
	buf  bytes.Buffer

	mu    sync.Mutex
	paths []string

	closeErr error
}

func newWriter(r *Recorder) (*writer, error) {
	w := &writer{
		rec:  r,
		opts: r.opts,
		on:   [len(kinds)]bool{r.opts.Records, r.opts.Trace, r.opts.Payloads},
		ids:  newPrefixIDs(r.opts.MaxHashes),
		red:  redactor{rules: r.opts.Redact, max: r.opts.MaxBodyBytes},
	}
	w.enc = json.NewEncoder(&w.buf)
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
	w.write(j.r, j.body)
	w.rec.written.Add(1)
}

// tick flushes what was written since the last tick and rotates files that are too old.
func (w *writer) tick(now time.Time) {
	w.flushAll()
	for k, f := range w.files {
		if f != nil && now.Sub(f.start) >= w.opts.RotateAge {
			w.rotate(k)
		}
	}
}

func (w *writer) flushAll() {
	for _, f := range w.files {
		if f != nil {
			w.check(f.flush())
		}
	}
}

// write encodes r into every enabled file.
func (w *writer) write(r *record.Record, body []byte) {
	now := time.Now()
	if w.on[0] {
		w.put(0, now, func(*file) []byte {
			w.buf.Reset()
			_ = w.enc.Encode(r) // a record always encodes
			return w.buf.Bytes()
		})
	}
	if w.on[1] {
		w.put(1, now, func(f *file) []byte {
			w.hash = w.hashIDs(r, body)
			w.line = appendTrace(w.line[:0], r, r.Start.Sub(f.start), w.hash)
			return w.line
		})
	}
	if w.on[2] {
		p, err := w.red.payload(body)
		if err != nil {
			w.rec.skipped.Add(1)
			return
		}
		w.put(2, now, func(f *file) []byte {
			w.line = appendPayload(w.line[:0], r, r.Start.Sub(f.start), p)
			return w.line
		})
	}
}

// hashIDs tokenizes the prompt of body and returns its chained block ids for the current trace
// file, exactly blocks(input tokens) of them.
func (w *writer) hashIDs(r *record.Record, body []byte) []int64 {
	want := blocks(r.InputTokens)
	if want == 0 {
		return w.hash[:0]
	}
	var toks []uint
	if len(body) > 0 {
		req := decode.ParseRequestFor(r.API, body, len(body))
		toks, _ = tokens.IDs(req.Prompt) // on error the ids are all fresh
	}
	return w.ids.assign(w.hash[:0], toks, want)
}

// put writes the line encode makes for the file of kind k. When the line would take the file
// past RotateBytes, the file is rotated and the line encoded again for the new one (its
// timestamps and hash ids are relative to the file).
func (w *writer) put(k int, now time.Time, encode func(*file) []byte) {
	f := w.ensure(k, now)
	if f == nil {
		return
	}
	line := encode(f)
	if f.size > 0 && f.size+int64(len(line)) > w.opts.RotateBytes {
		w.rotate(k)
		if f = w.ensure(k, now); f == nil {
			return
		}
		line = encode(f)
	}
	if !w.check(f.write(line)) {
		w.drop(k)
	}
}

// ensure returns the open file of kind k, opening a new one when the last was rotated away or
// failed.
func (w *writer) ensure(k int, now time.Time) *file {
	if w.files[k] == nil && !w.check(w.open(k, now)) {
		return nil
	}
	return w.files[k]
}

func (w *writer) open(k int, now time.Time) error {
	f, err := openFile(w.opts.Dir, kinds[k], now)
	if err != nil {
		return err
	}
	w.files[k] = f
	if k == 1 {
		w.ids.reset()
	}
	w.setPaths()
	return nil
}

// rotate closes the file of kind k; the next line opens a new one.
func (w *writer) rotate(k int) {
	if f := w.files[k]; f != nil {
		w.check(f.close())
		w.files[k] = nil
		w.setPaths()
	}
}

// drop abandons a file after a failed write; the next line tries a new file.
func (w *writer) drop(k int) {
	if f := w.files[k]; f != nil {
		_ = f.f.Close()
		w.files[k] = nil
		w.setPaths()
	}
}

func (w *writer) closeFiles() error {
	var errs []error
	for k, f := range w.files {
		if f != nil {
			errs = append(errs, f.close())
			w.files[k] = nil
		}
	}
	w.setPaths()
	return errors.Join(errs...)
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
}
