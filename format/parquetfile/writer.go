package parquetfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/llmtap/llmtap/format/recfile"
)

// Ext is the extension of the files.
const Ext = ".parquet"

// Metadata keys every file carries: the file's kind and its start (RFC 3339, nanoseconds):
// the arrival of its first row, from which the trace's timestamp column counts.
const (
	MetaKind  = "llmtap.kind"
	MetaStart = "llmtap.start"
)

// Defaults of WriterOptions' zero values.
const (
	DefaultMaxRows      = 1 << 20
	DefaultMaxBytes     = 256 << 20
	DefaultRowGroupRows = 1 << 14
	// DefaultRowGroupBytes bounds the rows a writer buffers before it writes them out as a
	// row group (its estimate of their size): the memory of one open file.
	DefaultRowGroupBytes = 16 << 20
)

// WriterOptions configure a Writer. The zero value of a field means its default.
type WriterOptions struct {
	// Dir is the output folder; partitions are made under it.
	Dir string
	// Kind is recfile.KindRecords or recfile.KindTrace.
	Kind string
	// MaxRows rolls a file (closes it; the next row of its hour opens another) once it holds
	// this many rows. Default DefaultMaxRows.
	MaxRows int64
	// MaxBytes rolls a file once the bytes written to it pass this. Default DefaultMaxBytes.
	MaxBytes int64
	// MaxAge rolls a file this long after it was opened (0: only at the end of its hour and
	// by rows and bytes).
	MaxAge time.Duration
	// RowGroupRows and RowGroupBytes bound the rows buffered in memory before they are
	// written as a row group. Defaults DefaultRowGroupRows, DefaultRowGroupBytes.
	RowGroupRows  int
	RowGroupBytes int64
}

// Writer writes rows of one kind into hourly Hive-style partitions,
// Dir/dt=YYYY-MM-DD/hour=HH/<kind>-<UTC start>.parquet, by each row's arrival (UTC). A file
// is readable once closed (its footer written): Close, a roll, or CloseIdle closes it. It is
// not safe for concurrent use.
type Writer[T any] struct {
	opts  WriterOptions
	parts map[time.Time]*part[T]
	now   func() time.Time
}

// part is the open file of one hour.
type part[T any] struct {
	f        *os.File
	cw       countWriter
	w        *parquet.GenericWriter[T]
	path     string
	start    time.Time
	opened   time.Time
	last     time.Time // when a row was last written to it
	rows     int64
	batch    []T   // rows not yet handed to w (it takes them faster many at a time)
	buffered int   // rows since the last row group
	bufBytes int64 // their estimated size
}

type countWriter struct {
	f *os.File
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	c.n += int64(n)
	return n, err
}

// NewWriter returns a writer; it creates Dir when missing (0700) and opens no file yet.
func NewWriter[T any](o WriterOptions) (*Writer[T], error) {
	if o.Kind != recfile.KindRecords && o.Kind != recfile.KindTrace {
		return nil, fmt.Errorf("parquet kind %q: want %s or %s", o.Kind, recfile.KindRecords, recfile.KindTrace)
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.RowGroupBytes <= 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if err := os.MkdirAll(o.Dir, recfile.DirMode); err != nil {
		return nil, err
	}
	return &Writer[T]{opts: o, parts: map[time.Time]*part[T]{}, now: time.Now}, nil
}

// Partition is the folder, relative to the output folder, of rows that arrived at t.
func Partition(t time.Time) string {
	t = t.UTC()
	return filepath.Join("dt="+t.Format("2006-01-02"), "hour="+t.Format("15"))
}

// Write adds one row that arrived at start; build builds it given the start of the file it
// goes to (a trace row's timestamp counts from it). size is the row's estimated bytes in
// memory, which bounds the buffered row group.
func (w *Writer[T]) Write(start time.Time, size int64, build func(fileStart time.Time) T) error {
	hour := start.UTC().Truncate(time.Hour)
	p := w.parts[hour]
	if p != nil && (p.rows >= w.opts.MaxRows || p.cw.n >= w.opts.MaxBytes ||
		(w.opts.MaxAge > 0 && w.now().Sub(p.opened) >= w.opts.MaxAge)) {
		err := w.closePart(hour)
		p = nil
		if err != nil {
			return err
		}
	}
	if p == nil {
		var err error
		if p, err = w.open(start); err != nil {
			return err
		}
		w.parts[hour] = p
	}
	p.batch = append(p.batch, build(p.start))
	p.rows++
	p.buffered++
	p.bufBytes += size
	p.last = w.now()
	group := p.buffered >= w.opts.RowGroupRows || p.bufBytes >= w.opts.RowGroupBytes
	if len(p.batch) < batchRows && !group {
		return nil
	}
	if err := p.hand(); err != nil {
		w.abandon(hour)
		return err
	}
	if group {
		p.buffered, p.bufBytes = 0, 0
		if err := p.w.Flush(); err != nil {
			w.abandon(hour)
			return err
		}
	}
	return nil
}

// batchRows is how many rows a part collects before it hands them to the Parquet writer.
const batchRows = 256

// hand gives the collected rows to the Parquet writer.
func (p *part[T]) hand() error {
	if len(p.batch) == 0 {
		return nil
	}
	_, err := p.w.Write(p.batch)
	clear(p.batch)
	p.batch = p.batch[:0]
	return err
}

// abandon closes the hour's file after a failed write, without its footer: its rows are lost
// (the caller counts them), the next row of the hour opens a new file.
func (w *Writer[T]) abandon(hour time.Time) {
	p := w.parts[hour]
	delete(w.parts, hour)
	p.f.Close()
	os.Remove(p.path)
}

func (w *Writer[T]) open(start time.Time) (*part[T], error) {
	dir := filepath.Join(w.opts.Dir, Partition(start))
	if err := os.MkdirAll(dir, recfile.DirMode); err != nil {
		return nil, err
	}
	f, err := recfile.Create(dir, w.opts.Kind, Ext, start)
	if err != nil {
		return nil, err
	}
	p := &part[T]{f: f, path: f.Name(), start: start, opened: w.now()}
	p.cw.f = f
	p.w = parquet.NewGenericWriter[T](&p.cw,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		parquet.CreatedBy("llmtap", "", ""),
		parquet.KeyValueMetadata(MetaKind, w.opts.Kind),
		parquet.KeyValueMetadata(MetaStart, start.UTC().Format(time.RFC3339Nano)))
	return p, nil
}

// closePart writes the footer of the hour's file, syncs and closes it. A file that received
// no row is removed.
func (w *Writer[T]) closePart(hour time.Time) error {
	p := w.parts[hour]
	delete(w.parts, hour)
	err := errors.Join(p.hand(), p.w.Close(), p.f.Sync(), p.f.Close())
	if p.rows == 0 {
		os.Remove(p.path)
	}
	return err
}

// CloseIdle closes the files of past hours that received no row for idle, and every file
// older than MaxAge: rows that arrived in an hour keep going to its file while requests that
// began in it end.
func (w *Writer[T]) CloseIdle(now time.Time, idle time.Duration) error {
	cur := now.UTC().Truncate(time.Hour)
	var errs []error
	for hour, p := range w.parts {
		if (hour.Before(cur) && now.Sub(p.last) >= idle) || (w.opts.MaxAge > 0 && now.Sub(p.opened) >= w.opts.MaxAge) {
			errs = append(errs, w.closePart(hour))
		}
	}
	return errors.Join(errs...)
}

// Close closes every open file.
func (w *Writer[T]) Close() error {
	var errs []error
	for hour := range w.parts {
		errs = append(errs, w.closePart(hour))
	}
	return errors.Join(errs...)
}

// Paths returns the files open now, sorted.
func (w *Writer[T]) Paths() []string {
	var ps []string
	for _, p := range w.parts {
		ps = append(ps, p.path)
	}
	slices.SortFunc(ps, recfile.Compare)
	return ps
}
