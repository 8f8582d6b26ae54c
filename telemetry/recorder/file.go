package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
)

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

// createSink creates a new file dir/<kind>-<start>.jsonl (recfile.Create).
func createSink(dir, kind string, start time.Time) (sink, error) {
	return recfile.Create(dir, kind, ".jsonl", start)
}

// makeDir creates dir 0700 when it is missing; an existing folder keeps its mode (it may be
// shared on purpose), but must be a folder.
func makeDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, recfile.DirMode)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// openFile creates dir/<kind>-<start>.jsonl 0600, never reusing an existing file.
func openFile(create func(dir, kind string, start time.Time) (sink, error), dir, kind string, start time.Time) (*file, error) {
	f, err := create(dir, kind, start)
	if err != nil {
		return nil, err
	}
	return &file{f: f, w: bufio.NewWriterSize(f, 64<<10), path: f.Name(), start: start}, nil
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
