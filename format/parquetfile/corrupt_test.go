package parquetfile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
)

// TestCorruptFiles: 500 copies of a records file with 1–4 random bytes changed each read to
// their end or stop with an error; parquet-go panics on some malformed pages (a nil
// dereference in decodeDataPage, seen here before Reader recovered it).
func TestCorruptFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, _ := NewWriter[RecordRow](WriterOptions{Dir: dir, Kind: recfile.KindRecords})
	at := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
	v := 1.5
	for i := range 3 {
		w.Write(at, 100, func(time.Time) RecordRow {
			return RecordRow{RequestID: "r", Start: at.Add(time.Duration(i)), TTFTMs: &v, InterChunkMs: []float64{1, 2}}
		})
	}
	w.Close()
	files, _ := Files(dir, recfile.KindRecords)
	seed, _ := os.ReadFile(files[0])
	rng := rand.New(rand.NewPCG(1, 1))
	for n := range 500 {
		b := append([]byte(nil), seed...)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		p := filepath.Join(dir, fmt.Sprintf("m%d.parquet", n))
		os.WriteFile(p, b, 0o600)
		readAll[RecordRow](p)
		os.Remove(p)
	}
}
