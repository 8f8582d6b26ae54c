package recorder

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
)

// fullSink is a real recording file whose writes and syncs fail with ENOSPC while full is
// set: a disk that filled up, then got space back.
type fullSink struct {
	*os.File
	full *atomic.Bool
}

func (s fullSink) Write(p []byte) (int, error) {
	if s.full.Load() {
		return 0, syscall.ENOSPC
	}
	return s.File.Write(p)
}

func (s fullSink) Sync() error {
	if s.full.Load() {
		return syscall.ENOSPC
	}
	return s.File.Sync()
}

// fakeClock is the writer's back-off clock, moved by the test.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestDiskFullCountsFailuresAndBacksOff fills the disk under a recorder: records whose lines
// could not be written are counted failed, not written; the writer opens no new file while it
// backs off, and removes the one it tried after the back-off when that failed too (no empty
// file per failed write); once the disk has room again, writing resumes in a new file and every
// record is accounted for.
func TestDiskFullCountsFailuresAndBacksOff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := newRecorder(Options{Dir: dir, Records: true, Trace: true, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	var opens atomic.Int64
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	r.w.now = clock.now
	r.w.create = func(dir, kind string, start time.Time) (sink, error) {
		opens.Add(1)
		f, err := recfile.Create(dir, kind, ".jsonl", start)
		if err != nil {
			return nil, err
		}
		return fullSink{f, &full}, nil
	}
	// The first files were opened before the hook: close and remove them, so every file of the
	// test is opened through it.
	for k := range kinds {
		if f := r.w.files[k]; f != nil {
			r.w.rotate(k)
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
		}
	}
	go r.w.run()
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sent := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if !r.Submit(rec(sent, time.Now(), nil), nil) {
				t.Fatalf("record %d dropped with a free queue", sent)
			}
			sent++
			if sent%10 == 0 {
				if err := r.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	files := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		return len(m)
	}

	send(10) // healthy
	if st := r.Stats(); st.Written != 10 || st.Failed != 0 || opens.Load() != 2 {
		t.Fatalf("healthy: stats %+v, %d files opened; want 10 written, 2 opened", st, opens.Load())
	}

	full.Store(true)
	send(200) // a flush every 10 records, each failing or backed off
	if st := r.Stats(); st.Written != 10 || st.Failed != 200 || st.Dropped != 0 {
		t.Errorf("disk full: stats %+v; want the 200 records counted failed, none written", st)
	}
	if n := opens.Load(); n != 2 {
		t.Errorf("disk full: %d files opened in all, want still 2: no new file inside the back-off", n)
	}
	clock.advance(minBackoff + time.Millisecond) // the back-off passes: one try per kind
	send(10)
	if n := opens.Load(); n != 4 {
		t.Errorf("after the back-off: %d files opened in all, want 4 (one try per kind)", n)
	}
	if n := files(); n != 2 {
		t.Errorf("%d files in the folder, want the 2 healthy ones: a file that never took a byte is removed", n)
	}
	send(10) // the back-off doubled: no try
	if n := opens.Load(); n != 4 {
		t.Errorf("inside the doubled back-off: %d files opened, want still 4", n)
	}

	full.Store(false)
	clock.advance(2*minBackoff + time.Millisecond)
	send(10)
	closeRec(t, r)
	st := r.Stats()
	if st.Written != 20 || st.Failed != 220 || st.Written+st.Failed+st.Dropped != uint64(sent) {
		t.Errorf("after recovery: stats %+v; want 20 written, 220 failed, %d in all", st, sent)
	}
	if recs, _ := readAll(t, dir, recfile.KindRecords, trace.FormatRecords); len(recs) != 20 {
		t.Errorf("%d record lines in the files, want the 20 written", len(recs))
	}
	if n := files(); n != 4 {
		t.Errorf("%d files in the folder, want 4 (2 before the disk filled, 2 after)", n)
	}
}
