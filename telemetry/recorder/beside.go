package recorder

import (
	"encoding/json"
	"os"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
)

// Beside writes lines of its own kind beside the recordings of a set of folders that changes
// over time (in the proxy: the timeline's final windows beside every running recording). Each
// folder gets <Kind>-<start>.jsonl (mode 0600, a name recfile.Create never reuses), rotated when
// the folder's recorder would rotate its own files (its RotateBytes and RotateAge); a folder
// no longer recorded to has its file closed at the next line. Lines are written unbuffered, so
// a crash loses none that Write returned. A failing folder is reported once through OnError
// and tried again at the next line. Beside is not safe for concurrent use: one goroutine owns
// it.
type Beside struct {
	// Kind names the files. Required.
	Kind string
	// Dirs returns the folders recorded to now, with their recorders' options (defaults
	// applied, as Recorder.Options returns them). Required.
	Dirs func() map[string]Options
	// OnError, when set, is told the first failure of each folder ("" for a value that does
	// not encode).
	OnError func(dir string, err error)

	open   map[string]*besideFile
	failed map[string]bool
	line   []byte
}

type besideFile struct {
	f     *os.File
	start time.Time
	size  int64
}

// WriteJSON writes v as one JSON line to a file in every folder recorded to now, rotating and
// closing files as the folders' recorders would.
func (b *Beside) WriteJSON(v any) {
	dirs := b.Dirs()
	for dir, bf := range b.open {
		if _, ok := dirs[dir]; !ok {
			b.close(dir, bf)
		}
	}
	if len(dirs) == 0 {
		return
	}
	line, err := json.Marshal(v)
	if err != nil {
		b.fail("", err)
		return
	}
	b.line = append(append(b.line[:0], line...), '\n')
	now := time.Now()
	for dir, opts := range dirs {
		bf := b.open[dir]
		if bf != nil && (opts.tooBig(bf.size, len(b.line)) || opts.tooOld(bf.start, now)) {
			b.close(dir, bf)
			bf = nil
		}
		if bf == nil {
			f, err := recfile.Create(dir, b.Kind, ".jsonl", now)
			if err != nil {
				b.fail(dir, err)
				continue
			}
			bf = &besideFile{f: f, start: now}
			if b.open == nil {
				b.open = map[string]*besideFile{}
			}
			b.open[dir] = bf
		}
		n, err := bf.f.Write(b.line)
		bf.size += int64(n)
		if err != nil {
			b.fail(dir, err)
		}
	}
}

// Close syncs and closes every open file.
func (b *Beside) Close() {
	for dir, bf := range b.open {
		b.close(dir, bf)
	}
}

func (b *Beside) close(dir string, bf *besideFile) {
	if err := bf.f.Sync(); err != nil {
		b.fail(dir, err)
	}
	if err := bf.f.Close(); err != nil {
		b.fail(dir, err)
	}
	delete(b.open, dir)
}

func (b *Beside) fail(dir string, err error) {
	if b.failed == nil {
		b.failed = map[string]bool{}
	}
	if !b.failed[dir] && b.OnError != nil {
		b.OnError(dir, err)
	}
	b.failed[dir] = true
}
