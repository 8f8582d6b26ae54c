package parquetfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
)

// FuzzOpen: any bytes in a .parquet file read as rows or end with an error, never a panic or
// a hang; seeded with a valid records file, a valid trace file, and cuts of them.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	w, err := NewWriter[RecordRow](WriterOptions{Dir: dir, Kind: recfile.KindRecords})
	if err != nil {
		f.Fatal(err)
	}
	at := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
	v := 1.5
	for i := range 3 {
		w.Write(at, 100, func(time.Time) RecordRow {
			return RecordRow{RequestID: "r", Start: at.Add(time.Duration(i)), TTFTMs: &v, InterChunkMs: []float64{1, 2}}
		})
	}
	w.Close()
	tw, _ := NewWriter[TraceRow](WriterOptions{Dir: dir, Kind: recfile.KindTrace})
	tw.Write(at, 100, func(fs time.Time) TraceRow { return NewTraceRow(at, fs, TraceFields{HashIDs: []int64{1, 2}}) })
	tw.Close()
	for _, kind := range []string{recfile.KindRecords, recfile.KindTrace} {
		files, _ := Files(dir, kind)
		b, _ := os.ReadFile(files[0])
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[len(b)/3:])
	}
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		readAll[RecordRow](p)
		readAll[TraceRow](p)
		if bytes.HasPrefix(b, []byte("PAR1")) {
			Meta(p)
		}
	})
}

func readAll[T any](p string) {
	rd, err := Open[T](p)
	if err != nil {
		return
	}
	defer rd.Close()
	for range 1 << 12 {
		if _, err := rd.Next(); err != nil {
			return
		}
	}
}
