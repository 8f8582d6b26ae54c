package scrape

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// FuzzParsePage feeds arbitrary pages through the parser and both
// normalizers. Beyond not panicking, whatever is accepted must come out
// consistent: histograms with one count per bound, valid bits only from the
// known set, and memory totals no smaller than used.
func FuzzParsePage(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.prom"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"a 1\n",
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"vllm:num_requests_running{model_name=\"m\"} NaN\n",
		"DCGM_FI_DEV_FB_USED{gpu=\"0\"} 1e300\nDCGM_FI_DEV_FB_FREE{gpu=\"0\"} -Inf\n",
		"{\"quoted.name\",model_name=\"m\"} 1\n",
		"a{x=\"\\\"\"} 1 1700000000000\n",
	} {
		f.Add([]byte(s))
	}
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, page []byte) {
		fams, err := ParsePage(bytes.NewReader(page), max)
		if err != nil {
			return
		}
		sm := Normalize(fams)
		for _, m := range sm.Models {
			if m.Valid&^knownServerFields != 0 {
				t.Fatalf("unknown valid bits %#x", m.Valid)
			}
			for _, h := range []Histogram{m.TTFT, m.ITL, m.E2E, m.Queue, m.Prefill, m.Decode} {
				if len(h.UpperBounds) != len(h.Cumulative) {
					t.Fatalf("%d bounds, %d counts", len(h.UpperBounds), len(h.Cumulative))
				}
			}
		}
		for _, s := range appendDCGM(nil, fams, time.Time{}, map[dcgmKey]int{}) {
			if s.Valid&^gpu.FieldAll != 0 {
				t.Fatalf("unknown valid bits %v", s.Valid)
			}
			if s.Has(gpu.FieldMemory) && s.MemUsed > s.MemTotal {
				t.Fatalf("used %d > total %d", s.MemUsed, s.MemTotal)
			}
			if s.Has(gpu.FieldPower) && uint64(s.PowerMW) > math.MaxUint32 {
				t.Fatal("unreachable")
			}
		}
	})
}
