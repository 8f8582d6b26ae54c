package framing

import (
	"bytes"
	"testing"
)

// The benchmarks replay a real capture, repeated to a realistic response size, in two write
// patterns: the capture's own socket reads (one or two events per write, the proxy's common
// case) and 32 KiB writes (a buffered copy, where most events sit whole inside one write).
// They report throughput (MB/s, via SetBytes), ns/event and allocations; the floors are
// 500 MB/s per core and 0 allocs per event in steady state.

// benchRepeat is how many times the capture is repeated per benchmark iteration.
const benchRepeat = 16

// benchWrites returns the capture's body repeated benchRepeat times, cut into writes of the
// capture's read sizes (cycled) or of a fixed size.
func benchWrites(b *testing.B, name string, fixed int) (writes [][]byte, total int) {
	b.Helper()
	reads, body := loadCapture(b, name)
	stream := bytes.Repeat(body, benchRepeat)
	for i := 0; len(stream) > 0; i++ {
		n := fixed
		if n == 0 {
			n = len(reads[i%len(reads)].data)
		}
		n = min(n, len(stream))
		writes = append(writes, stream[:n])
		stream = stream[n:]
	}
	return writes, len(body) * benchRepeat
}

// benchFramer feeds the writes to f once per iteration and reports the metrics.
func benchFramer(b *testing.B, f Framer, events *int, writes [][]byte, total int) {
	b.SetBytes(int64(total))
	b.ReportAllocs()
	// One warm-up pass grows the internal buffers, so the loop measures the steady state.
	for _, w := range writes {
		f.Write(w, 0)
	}
	f.Close()
	f.Reset()
	*events = 0
	for b.Loop() {
		for i, w := range writes {
			f.Write(w, int64(i))
		}
		f.Close()
		f.Reset()
	}
	if *events == 0 {
		b.Fatal("no events")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(*events), "ns/event")
}

var benchSizes = []struct {
	name  string
	fixed int
}{{"capture-reads", 0}, {"32KiB", 32 << 10}}

func BenchmarkSSE(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			writes, total := benchWrites(b, "chat", size.fixed)
			events, sum := 0, 0
			s := NewSSE(0, func(e *Event) { events++; sum += len(e.Data) })
			benchFramer(b, s, &events, writes, total)
		})
	}
}

func BenchmarkNDJSON(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			writes, total := benchWrites(b, "native-api-chat", size.fixed)
			events, sum := 0, 0
			s := NewNDJSON(0, func(e *Event) { events++; sum += len(e.Data) })
			benchFramer(b, s, &events, writes, total)
		})
	}
}
