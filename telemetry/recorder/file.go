package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Kinds of file, as they appear in file names.
const (
	KindRecords  = "records"
	KindTrace    = "trace"
	KindPayloads = "payloads"
)

// File and folder modes: recordings can hold prompts, so only their owner reads them.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// nameLayout is the start time in file names: UTC, sortable, no characters that need quoting.
const nameLayout = "20060102T150405.000Z"

// file is one open recording file of a kind. The writer goroutine owns it.
type file struct {
	f       sink
	w       *bufio.Writer
	path    string
	start   time.Time
	size    int64
	flushed int64 // bytes handed to the operating system
	dirty   bool  // written since the last flush
}

// sink is what a file writes to: an *os.File (tests put one that fails in between).
type sink interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// createSink creates a new file, as CreateFile.
func createSink(dir, kind string, start time.Time) (sink, error) { return CreateFile(dir, kind, start) }

// makeDir creates dir 0700 when it is missing; an existing folder keeps its mode (it may be
// shared on purpose), but must be a folder.
func makeDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, dirMode)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// openFile creates dir/<kind>-<start>.jsonl 0600, never reusing an existing file: a suffix -1,
// -2 … is added when the name is taken (two rotations within a millisecond, two recorders in
// one folder across a reload).
func openFile(create func(dir, kind string, start time.Time) (sink, error), dir, kind string, start time.Time) (*file, error) {
	f, err := create(dir, kind, start)
	if err != nil {
		return nil, err
	}
	return &file{f: f, w: bufio.NewWriterSize(f, 64<<10), path: f.Name(), start: start}, nil
}

// CreateFile creates a new file dir/<kind>-<start>.jsonl with mode 0600 in an existing folder,
// named like the recorder's own files and never reusing one, for lines written beside a
// recording by another part of llmtap (the timeline).
func CreateFile(dir, kind string, start time.Time) (*os.File, error) {
	base := kind + "-" + start.UTC().Format(nameLayout)
	for i := 0; i < 1000; i++ {
		name := base + ".jsonl"
		if i > 0 {
			name = fmt.Sprintf("%s-%d.jsonl", base, i)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free file name for %s in %s", base, dir)
}

// write appends one line (with its newline).
func (f *file) write(line []byte) error {
	n, err := f.w.Write(line)
	f.size += int64(n)
	f.dirty = true
	return err
}

// flush hands the buffered lines to the operating system, where a crash of the process no
// longer loses them.
func (f *file) flush() error {
	if !f.dirty {
		return nil
	}
	f.dirty = false
	err := f.w.Flush()
	f.flushed = f.size - int64(f.w.Buffered())
	return err
}

// close flushes, syncs to the disk and closes.
func (f *file) close() error {
	return errors.Join(f.w.Flush(), f.f.Sync(), f.f.Close())
}
