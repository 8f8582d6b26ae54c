package inject

import (
	"io"
	"os"
	"testing"
)

func BenchmarkAddIncludeUsage(b *testing.B) {
	body := []byte(`{"model":"stories260k","stream":true,"max_tokens":128,"temperature":0,"messages":[{"role":"user","content":"Once upon a time"}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, res := AddIncludeUsage(body); res != Injected {
			b.Fatal(res)
		}
	}
}

// BenchmarkFilter filters a recorded Ollama stream (129 events) written one event per write.
func BenchmarkFilter(b *testing.B) {
	raw, err := os.ReadFile("../decode/testdata/chat.txt")
	if err != nil {
		b.Fatal(err)
	}
	var writes [][]byte
	for rest := raw; len(rest) > 0; {
		n := eventEnd(rest)
		if n < 0 {
			n = len(rest)
		}
		writes = append(writes, rest[:n])
		rest = rest[n:]
	}
	f := NewFilter(io.Discard, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		*f = Filter{w: io.Discard, max: 1 << 20, scratch: f.scratch, pending: f.pending}
		for _, w := range writes {
			f.Write(w)
		}
	}
}
