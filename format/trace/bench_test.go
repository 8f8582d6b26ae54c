package trace

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// benchRead measures a reader over a whole shared trace held in memory: MB/s from SetBytes,
// rows/s as a custom metric.
func benchRead(b *testing.B, rel string) {
	data, err := os.ReadFile(sharedTrace(b, rel))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	rows := 0
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows++
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkReadAzureCode(b *testing.B)     { benchRead(b, "azure2023/AzureLLMInferenceTrace_code.csv") }
func BenchmarkReadMooncakeConv(b *testing.B)  { benchRead(b, "mooncake/conversation_trace.jsonl") }
func BenchmarkReadBurstGPTSlice(b *testing.B) { benchRead(b, "burstgpt/BurstGPT_3_slice400.csv") }

// BenchmarkStatsMooncakeConv measures the summary of a 12k-request trace with hash ids.
func BenchmarkStatsMooncakeConv(b *testing.B) {
	reqs, _, err := ReadFile(sharedTrace(b, "mooncake/conversation_trace.jsonl"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		summarize(reqs)
	}
}

// BenchmarkWriteMooncake measures the writer on the Azure code trace with synthetic ids.
func BenchmarkWriteMooncake(b *testing.B) {
	reqs, _, err := ReadFile(sharedTrace(b, "azure2023/AzureLLMInferenceTrace_code.csv"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := NewHashSynth(0)
	for i := range reqs {
		s.Assign(&reqs[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		w := NewMooncakeWriter(io.Discard, WriterOptions{})
		for _, r := range reqs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		w.Flush()
	}
	b.ReportMetric(float64(len(reqs)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
