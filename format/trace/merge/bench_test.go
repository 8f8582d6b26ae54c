package merge

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
)

// BenchmarkTraceMerge merges three instances' trace files of 50,000 rows each (Azure-like
// lengths: ~1,000-token prompts as 512-token blocks, a quarter of them sharing a system-prompt
// prefix, ids spread over 53 bits as keyed ids are) and writes the Mooncake output to nowhere.
// It reports rows merged per second and the input's bytes per row, the figures docs/fleet.md
// scales to a day of a large fleet.
func BenchmarkTraceMerge(b *testing.B) {
	const instances, rows = 3, 50_000
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	shared := []int64{rng.Int64N(1 << 53), rng.Int64N(1 << 53)}
	var paths []string
	var size int64
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range instances {
		p := filepath.Join(dir, recfile.Name(recfile.KindTrace, start.Add(time.Duration(i)*time.Second), ".jsonl"))
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w := trace.NewMooncakeWriter(f, trace.WriterOptions{})
		for j := range rows {
			in := 200 + rng.IntN(1800)
			ids := make([]int64, trace.Blocks(in, 512))
			for k := range ids {
				ids[k] = rng.Int64N(1 << 53)
			}
			if j%4 == 0 {
				copy(ids, shared)
			}
			// Written at completion: arrival order within a file is only roughly kept.
			at := time.Duration(j)*3*time.Millisecond + time.Duration(rng.IntN(50))*time.Millisecond
			if err := w.Write(trace.Request{Timestamp: at, InputLength: in, OutputLength: 1 + rng.IntN(500), HashIDs: ids}); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		st, _ := f.Stat()
		size += st.Size()
		f.Close()
		paths = append(paths, p)
	}
	b.ResetTimer()
	for range b.N {
		var info trace.Info
		m, err := traceInputs(paths, false, &info)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := writeTraceMerge(m, io.Discard, trace.WriterOptions{}); err != nil {
			b.Fatal(err)
		}
		m.close()
	}
	b.ReportMetric(float64(instances*rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size)/float64(instances*rows), "B/row")
}
