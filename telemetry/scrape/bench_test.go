package scrape

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// BenchmarkParsePage measures parsing one fixture page with the expfmt
// text parser and normalizing it, the CPU cost of one scrape without the
// network.
func BenchmarkParsePage(b *testing.B) {
	for _, name := range []string{"vllm.prom", "sglang.prom", "tgi.prom", "dcgm.prom"} {
		page := readFixture(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			var dst []gpu.Sample
			byKey := map[dcgmKey]int{}
			for b.Loop() {
				fams, err := ParsePage(bytes.NewReader(page), 0)
				if err != nil {
					b.Fatal(err)
				}
				if name == "dcgm.prom" {
					dst = appendDCGM(dst[:0], fams, time.Time{}, byKey)
				} else {
					_ = Normalize(fams)
				}
			}
		})
	}
}

// BenchmarkNormalize isolates the mapping from parsed families to
// ServerMetrics, to show how little of a scrape it is.
func BenchmarkNormalize(b *testing.B) {
	fams, err := ParsePage(bytes.NewReader(readFixture(b, "vllm.prom")), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Normalize(fams)
	}
}
