// Package merge merges the recording files of several llmtap instances (trace, records or
// payloads files, named by their recorder with their UTC start) into one file of the same kind
// in arrival order: what `llmtap trace merge` writes.
package merge

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
)

// A merge streams: llmtap's recorder writes a row when its request ends, so each file is in
// arrival order but for rows that arrived at most one request duration before rows already
// written. Each file is read ahead only as far as that reorder window (Options.Window): a row is
// final in its file once the file has shown a row arriving a window after it, and the
// smallest final row of all files is written next. Memory holds the rows of one window per
// file; ids are written as the files hold them, so no map grows with the input. A row that
// arrives before one already written (its file broke the window) stops the merge with its file
// and line, so the output is never silently out of order.

// DefaultWindow is how much earlier than the latest row read from a file a later row of
// that file may arrive: the longest request the recordings hold.
const DefaultWindow = 5 * time.Minute

// maxMergeHeld bounds the bytes of the rows a merge holds in its reorder windows: past it the
// input is denser than the window allows (files × rate × window) and the merge stops, naming
// --window, rather than growing.
const maxMergeHeld = 1 << 30

// mergeRow is one row of a merge at its request's absolute arrival: a trace request, or a
// records or payloads line.
type mergeRow struct {
	at   time.Time
	file int32
	seq  int32 // line in its file
	ms   int32 // payloads: where the timestamp_ms number ends
	size int32 // bytes held
	tr   traceFields
	line []byte // records and payloads: the line without its newline
}

// traceFields are what a merge keeps of a trace row: what the Mooncake writer writes, in less
// than half a trace.Request (a merge holds a window of rows per file).
type traceFields struct {
	in, out        int32 // bounded by limits.MaxTokens
	delay          time.Duration
	hashIDs        []int64
	session, model string
}

// request is the row as a trace.Request at timestamp ts.
func (f *traceFields) request(ts time.Duration) trace.Request {
	return trace.Request{Timestamp: ts, InputLength: int(f.in), OutputLength: int(f.out), Delay: f.delay,
		HashIDs: f.hashIDs, SessionID: f.session, Model: f.model}
}

// maxInterned bounds the distinct model names a merge shares one copy of.
const maxInterned = 1024

// interner shares one copy of each of the first maxInterned distinct strings.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// before orders rows by arrival, then file order, then line: the order of a stable sort of
// the files' rows concatenated, which the in-memory merge was.
func (r *mergeRow) before(o *mergeRow) bool {
	if c := r.at.Compare(o.at); c != 0 {
		return c < 0
	}
	if r.file != o.file {
		return r.file < o.file
	}
	return r.seq < o.seq
}

// rowHeap is a min-heap of rows.
type rowHeap []*mergeRow

func (h rowHeap) Len() int           { return len(h) }
func (h rowHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h rowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rowHeap) Push(x any)        { *h = append(*h, x.(*mergeRow)) }
func (h *rowHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

// mergeInput is one file of a merge: its rows in file order, those read and not yet written,
// and the latest arrival read.
type mergeInput struct {
	path  string
	read  func() (*mergeRow, error) // io.EOF after the last row
	close func() error
	held  rowHeap
	maxAt time.Time
	eof   bool
}

// inputHeap orders files by the first of their held rows.
type inputHeap []*mergeInput

func (h inputHeap) Len() int           { return len(h) }
func (h inputHeap) Less(i, j int) bool { return h[i].held[0].before(h[j].held[0]) }
func (h inputHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *inputHeap) Push(x any)        { *h = append(*h, x.(*mergeInput)) }
func (h *inputHeap) Pop() any {
	old := *h
	in := old[len(old)-1]
	*h = old[:len(old)-1]
	return in
}

// streamMerge merges inputs in arrival order within a reorder window.
type streamMerge struct {
	inputs  []*mergeInput
	window  time.Duration
	maxHeld int
	held    int
	last    *mergeRow // the row written last
	peak    int       // most bytes held at once
}

// fill reads in until its first held row is final (no later row of the file can arrive before
// it) or the file ends.
func (m *streamMerge) fill(in *mergeInput) error {
	for !in.eof && (len(in.held) == 0 || in.held[0].at.After(in.maxAt.Add(-m.window))) {
		r, err := in.read()
		if errors.Is(err, io.EOF) {
			in.eof = true
			break
		}
		if err != nil {
			return err
		}
		if m.last != nil && r.before(m.last) {
			return fmt.Errorf("%s:%d: arrives at %s, %v before a row of %s already written: out of order by more than the reorder window (--window %v); merge with a longer window",
				in.path, r.seq, r.at.Format(time.RFC3339Nano), m.last.at.Sub(r.at), m.inputs[m.last.file].path, m.window)
		}
		heap.Push(&in.held, r)
		if r.at.After(in.maxAt) {
			in.maxAt = r.at
		}
		if m.held += int(r.size); m.held > m.maxHeld {
			return fmt.Errorf("%s:%d: the rows within the reorder window of %d files take more than %d MiB (--window %v): merge fewer files at a time or with a shorter window",
				in.path, r.seq, len(m.inputs), m.maxHeld>>20, m.window)
		}
		m.peak = max(m.peak, m.held)
	}
	return nil
}

// run writes every row, in order, through emit.
func (m *streamMerge) run(emit func(*mergeRow) error) error {
	var ready inputHeap
	for _, in := range m.inputs {
		if err := m.fill(in); err != nil {
			return err
		}
		if len(in.held) > 0 {
			ready = append(ready, in)
		}
	}
	heap.Init(&ready)
	for len(ready) > 0 {
		in := ready[0]
		r := heap.Pop(&in.held).(*mergeRow)
		m.held -= int(r.size)
		m.last = r
		if err := emit(r); err != nil {
			return err
		}
		if err := m.fill(in); err != nil {
			return err
		}
		if len(in.held) > 0 {
			heap.Fix(&ready, 0)
		} else {
			heap.Pop(&ready)
		}
	}
	return nil
}

// close closes every input.
func (m *streamMerge) close() {
	for _, in := range m.inputs {
		if in.close != nil {
			in.close()
		}
	}
}

// maxPayloadMs is the largest timestamp_ms a payload line may give: the longest
// time.Duration in milliseconds.
const maxPayloadMs = math.MaxInt64 / int64(time.Millisecond)

// rowSize is what a held row takes apart from its variable parts (with its heap slot).
const rowSize = int(unsafe.Sizeof(mergeRow{})) + 8

// traceInputs opens llmtap trace files for a merge. Torn and skipped lines are added to info
// as each file ends.
func traceInputs(paths []string, skipBad bool, info *trace.Info) (*streamMerge, error) {
	m := &streamMerge{window: DefaultWindow, maxHeld: maxMergeHeld}
	models := interner{}
	for i, p := range paths {
		start, err := traceFileStart(p)
		if err != nil {
			m.close()
			return nil, err
		}
		rd, err := trace.Open(p, trace.Options{Format: trace.FormatMooncake, SkipBad: skipBad})
		if err != nil {
			m.close()
			return nil, err
		}
		in := &mergeInput{path: p, close: rd.Close}
		file := int32(i)
		in.read = func() (*mergeRow, error) {
			q, err := rd.Next()
			if errors.Is(err, io.EOF) {
				ri := rd.Info()
				info.Torn += ri.Torn
				info.Skipped += ri.Skipped
			}
			if err != nil {
				return nil, err
			}
			model := models.get(q.Model)
			size := rowSize + 8*cap(q.HashIDs) + len(q.SessionID) + len(q.Model) // the model counted even when shared
			at := start.Add(q.Timestamp)
			if a, ok := rd.Arrival(); ok {
				at = a // a Parquet trace keeps the exact arrival
			}
			return &mergeRow{at: at, file: file, seq: int32(rd.Info().Lines), size: int32(size),
				tr: traceFields{in: int32(q.InputLength), out: int32(q.OutputLength), delay: q.Delay, hashIDs: q.HashIDs, session: q.SessionID, model: model}}, nil
		}
		m.inputs = append(m.inputs, in)
	}
	return m, nil
}

// writeTraceMerge writes the merged trace as Mooncake JSONL, rebased to its first arrival,
// and returns the rows written.
func writeTraceMerge(m *streamMerge, w io.Writer, opt trace.WriterOptions) (int, error) {
	mw := trace.NewMooncakeWriter(w, opt)
	var t0 time.Time
	n := 0
	err := m.run(func(r *mergeRow) error {
		if n == 0 {
			t0 = r.at
		}
		n++
		return mw.Write(r.tr.request(r.at.Sub(t0)))
	})
	if err != nil {
		return n, err
	}
	return n, mw.Flush()
}

// lineInputs opens llmtap records or payloads files for a merge.
func lineInputs(kind string, paths []string, skipBad bool, info *trace.Info) (*streamMerge, error) {
	m := &streamMerge{window: DefaultWindow, maxHeld: maxMergeHeld}
	for i, path := range paths {
		_, start, err := recfile.Parse(path)
		if err != nil {
			m.close()
			return nil, err
		}
		if strings.HasSuffix(path, parquetfile.Ext) {
			in, err := parquetRecordsInput(kind, path, int32(i))
			if err != nil {
				m.close()
				return nil, err
			}
			m.inputs = append(m.inputs, in)
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			m.close()
			return nil, err
		}
		lines := trace.NewLines(f, maxMergeLine)
		var p fastjson.Parser
		in := &mergeInput{path: path, close: f.Close}
		in.read = func() (*mergeRow, error) {
			for {
				n, line, terminated, err := lines.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						err = fmt.Errorf("%s: %w", path, err)
					}
					return nil, err
				}
				switch {
				case len(bytes.TrimSpace(line)) == 0:
					continue
				case !terminated:
					info.Torn++
					continue
				}
				r, err := parseMergeLine(&p, kind, start, line)
				if err != nil {
					if !skipBad {
						return nil, fmt.Errorf("%s:%d: %w", path, n, err)
					}
					info.Skipped++
					continue
				}
				r.file, r.seq, r.line = int32(i), int32(n), bytes.Clone(line)
				r.size = int32(rowSize + len(line))
				return r, nil
			}
		}
		m.inputs = append(m.inputs, in)
	}
	return m, nil
}

// parquetRecordsInput reads a Parquet records file for a merge: each row as the JSON line
// the JSONL records file holds for it.
func parquetRecordsInput(kind, path string, file int32) (*mergeInput, error) {
	if kind != recfile.KindRecords {
		return nil, fmt.Errorf("%s: only records and trace are written as Parquet", path)
	}
	rd, err := parquetfile.Open[parquetfile.RecordRow](path)
	if err != nil {
		return nil, err
	}
	in := &mergeInput{path: path, close: rd.Close}
	in.read = func() (*mergeRow, error) {
		row, err := rd.Next()
		if err != nil {
			return nil, err
		}
		r := row.Record()
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", path, rd.Row(), err)
		}
		return &mergeRow{at: r.Start, file: file, seq: int32(rd.Row()), line: line, size: int32(rowSize + len(line))}, nil
	}
	return in, nil
}

// parseMergeLine reads the arrival of one records or payloads line (see mergeLines' rules in
// `trace merge`'s help): a record's RFC 3339 start, a payload's file start plus timestamp_ms.
func parseMergeLine(p *fastjson.Parser, kind string, start time.Time, line []byte) (*mergeRow, error) {
	v, err := p.ParseBytes(line)
	if err != nil {
		return nil, err
	}
	r := &mergeRow{}
	switch kind {
	case recfile.KindRecords:
		s := v.GetStringBytes("start")
		if s == nil {
			return nil, errors.New(`no "start" string`)
		}
		if r.at, err = time.Parse(time.RFC3339Nano, string(s)); err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
	case recfile.KindPayloads:
		// The merge rewrites the number after trace.PayloadLineStart and keeps the rest of
		// the line, payload included, byte for byte.
		if !bytes.HasPrefix(line, []byte(trace.PayloadLineStart)) {
			return nil, fmt.Errorf("does not begin with %s as the recorder writes it", trace.PayloadLineStart)
		}
		ms := v.GetFloat64("timestamp_ms")
		if !(ms >= 0) || ms > float64(maxPayloadMs) {
			return nil, fmt.Errorf("timestamp_ms %v out of range", ms)
		}
		r.at = start.Add(time.Duration(ms * float64(time.Millisecond)))
		n := len(trace.PayloadLineStart)
		r.ms = int32(n + bytes.IndexByte(line[n:], ','))
		if int(r.ms) < n {
			return nil, errors.New("no field after timestamp_ms")
		}
	}
	return r, nil
}

// writeLineMerge writes the merged lines, each with its newline: record lines byte for byte,
// payload lines with timestamp_ms rebased to the first arrival. It returns the lines written.
func writeLineMerge(m *streamMerge, kind string, w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var t0 time.Time
	var num []byte
	n := 0
	err := m.run(func(r *mergeRow) error {
		if n == 0 {
			t0 = r.at
		}
		n++
		if kind == recfile.KindPayloads {
			num = trace.AppendPayloadStart(num[:0], r.at.Sub(t0))
			bw.Write(num)
			bw.Write(r.line[r.ms:])
		} else {
			bw.Write(r.line)
		}
		return bw.WriteByte('\n')
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// Options are a merge's choices; the zero value means the defaults.
type Options struct {
	// Window is how much earlier than the latest row read from a file a later row of that file
	// may arrive: the longest request the recordings hold (default DefaultWindow).
	Window time.Duration
	// SkipBad skips malformed lines instead of stopping at the first.
	SkipBad bool
	// Trace is how a merge of trace files writes its Mooncake rows.
	Trace trace.WriterOptions
}

// Merge is a merge of recording files, opened and ready to write.
type Merge struct {
	kind string
	m    *streamMerge
	info trace.Info
	opt  Options
}

// Open opens the files of a merge: all of one kind (trace, records or payloads), each named as
// llmtap's recorder names it, which gives its kind and its start.
func Open(paths []string, opt Options) (*Merge, error) {
	kind, err := mergeKind(paths)
	if err != nil {
		return nil, err
	}
	mg := &Merge{kind: kind, opt: opt}
	if kind == recfile.KindTrace {
		mg.m, err = traceInputs(paths, opt.SkipBad, &mg.info)
	} else {
		mg.m, err = lineInputs(kind, paths, opt.SkipBad, &mg.info)
	}
	if err != nil {
		return nil, err
	}
	if opt.Window > 0 {
		mg.m.window = opt.Window
	}
	return mg, nil
}

// Kind is the kind of the files merged: "trace", "records" or "payloads".
func (mg *Merge) Kind() string { return mg.kind }

// Info counts the torn last lines ignored and the malformed lines skipped so far.
func (mg *Merge) Info() trace.Info { return mg.info }

// Write writes the merged file to w and returns the rows written: trace files as Mooncake
// JSONL, records lines byte for byte, payload lines with timestamp_ms rebased to the first
// arrival.
func (mg *Merge) Write(w io.Writer) (int, error) {
	if mg.kind == recfile.KindTrace {
		return writeTraceMerge(mg.m, w, mg.opt.Trace)
	}
	return writeLineMerge(mg.m, mg.kind, w)
}

// Close closes the files.
func (mg *Merge) Close() { mg.m.close() }
