package stats

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenSummary is a fixed scenario: a live model with varied requests, a reasoning request,
// a stream error and an HTTP 503, shadow traffic on the same model, under two SLOs, read 30 s
// after the aggregator started.
func goldenSummary(t *testing.T) Summary {
	t.Helper()
	clk := &fakeClock{t: t0}
	slos, err := ParseSLOs("time_to_first_token:200 inter_token_latency:20")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Now: clk.Now, SLOs: slos})
	for i := range 8 {
		at := time.Duration(i) * 2 * time.Second
		clk.Set(t0.Add(at + time.Second))
		r := streamRecord("llama-3.1-8b", record.ClassLive, t0.Add(at), 80+float64(i*i)*10, 12+float64(i), 16+i*8)
		r.InputTokens = int64(200 + 50*i)
		if i%4 == 3 {
			r.InputTokensSource = record.SourceTokenizer
			r.OutputTokensSource = record.SourceTokenizer
		}
		if i == 5 {
			r.ReasoningTokens = 40
		}
		a.Add(r)
	}
	clk.Set(t0.Add(20 * time.Second))
	bad := streamRecord("llama-3.1-8b", record.ClassLive, t0.Add(19*time.Second), 90, 15, 10)
	bad.Error, bad.ErrorMsg = record.ErrStream, "overloaded"
	a.Add(bad)
	a.Add(&record.Record{Model: "llama-3.1-8b", Class: record.ClassLive, Status: 503, Error: record.ErrHTTP,
		Start: t0.Add(19 * time.Second), HeadersMs: ptr(3), DurationMs: 4})
	for i := range 3 {
		clk.Set(t0.Add(time.Duration(21+i) * time.Second))
		a.Add(streamRecord("llama-3.1-8b", record.ClassShadow, t0.Add(time.Duration(20+i)*time.Second), 150, 25, 32))
	}
	clk.Set(t0.Add(30 * time.Second))
	return a.Summary()
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte, equal func(got, want []byte) bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !equal(got, want) {
		t.Errorf("%s differs from the output (run go test -update after checking the change):\n%s", path, got)
	}
}

// jsonNear compares two JSON documents member by member, numbers to 1e-9 relative: the
// statistics are sums and square roots, whose last bits may differ where the compiler fuses
// multiply-adds (arm64), while any real change moves them far more.
func jsonNear(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return valuesNear(x, y)
}

func valuesNear(x, y any) bool {
	switch xv := x.(type) {
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for k, v := range xv {
			if w, ok := yv[k]; !ok || !valuesNear(v, w) {
				return false
			}
		}
		return true
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for i := range xv {
			if !valuesNear(xv[i], yv[i]) {
				return false
			}
		}
		return true
	case float64:
		yv, ok := y.(float64)
		return ok && math.Abs(xv-yv) <= 1e-9*math.Max(math.Abs(xv), math.Abs(yv))
	}
	return x == y
}

func TestSummaryJSONGolden(t *testing.T) {
	t.Parallel()
	b, err := json.MarshalIndent(goldenSummary(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "summary.golden.json", append(b, '\n'), jsonNear)
}

func TestGroupJSONLayout(t *testing.T) {
	t.Parallel()
	s := goldenSummary(t)
	g, ok := s.Find(Key{"llama-3.1-8b", record.ClassLive, "5xx"}, WindowCumulative)
	if !ok {
		t.Fatal("no 5xx group")
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// A failed-only group has counts but no distribution: metrics without values are left
	// out instead of written as zeros.
	for _, tag := range []string{TagTTFT, TagHeadersLatency, TagRequestLatency} {
		if _, ok := m[tag]; ok {
			t.Errorf("%s present without values", tag)
		}
	}
	var ec Scalar
	if err := json.Unmarshal(m[TagErrorRequestCount], &ec); err != nil || ec.Value != 1 || ec.Unit != "requests" {
		t.Errorf("error_request_count = %s, want {unit: requests, avg: 1}", m[TagErrorRequestCount])
	}
	live, _ := s.Find(Key{"llama-3.1-8b", record.ClassLive, "2xx"}, WindowCumulative)
	b, _ = json.Marshal(live)
	var lm map[string]map[string]any
	_ = json.Unmarshal(b, &lm) // non-object members fail to decode and are skipped
	want := []string{"unit", "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std", "count", "sum"}
	ttft := lm[TagTTFT]
	for _, k := range want {
		if _, ok := ttft[k]; !ok {
			t.Errorf("time_to_first_token lacks %q: %v", k, ttft)
		}
	}
	if rt := lm[TagRequestThroughput]; len(rt) != 2 || rt["unit"] != "requests/sec" {
		t.Errorf("request_throughput = %v, want {unit, avg}", rt)
	}
}

func TestTableGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteTable(&b, goldenSummary(t)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "table.golden.txt", b.Bytes(), bytes.Equal)
}

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    float64
		want string
		why  string
	}{
		{0, "0.00", "zero keeps two decimals"},
		{999.994, "999.99", "rounds to two decimals"},
		{1234.5, "1,234.50", "thousands get a separator"},
		{-1234567.891, "-1,234,567.89", "negative numbers group the digits after the sign"},
	}
	for _, tt := range tests {
		if got := formatNumber(tt.v); got != tt.want {
			t.Errorf("%s: formatNumber(%v) = %q, want %q", tt.why, tt.v, got, tt.want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestWritersReportErrors(t *testing.T) {
	t.Parallel()
	s := goldenSummary(t)
	if err := WriteTable(failWriter{}, s); err == nil {
		t.Error("WriteTable hid a write error")
	}
}

// TestCombineCountsEveryStatus: the group AIPerf's exports describe counts the failures of
// every status class (a 5xx is an error of its own group in the summary), takes its
// distributions and time bounds from the valid requests, and recomputes the rates over them.
func TestCombineCountsEveryStatus(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	slos, _ := ParseSLOs("time_to_first_token:1000")
	a := New(Options{Now: clk.Now, SLOs: slos})
	for i := range 4 {
		a.Add(streamRecord("m", record.ClassBench, t0.Add(time.Duration(i)*time.Second), 100, 10, 5))
	}
	for i := range 2 { // later, and failed: they bound nothing
		a.Add(&record.Record{Model: "m", Class: record.ClassBench, Status: 500, Error: record.ErrHTTP,
			Start: t0.Add(time.Duration(10+i) * time.Second), DurationMs: 5})
	}
	s := a.Summary()
	var groups []GroupSummary
	for _, g := range s.Groups {
		if g.Window == WindowCumulative {
			groups = append(groups, g)
		}
	}
	if len(groups) != 2 {
		t.Fatalf("%d cumulative groups, want 2xx and 5xx", len(groups))
	}
	c := Combine(groups, true)
	want := map[string]float64{
		TagRequestCount:      4,
		TagErrorRequestCount: 2,
		TagGoodRequestCount:  4,
		TagGoodRequestFrac:   4.0 / 6,
		TagTotalOSL:          20,
		TagBenchmarkDuration: 3.141, // the last valid request starts at 3 s and lasts 141 ms
		TagRequestThroughput: 4 / 3.141,
	}
	for tag, v := range want {
		if got := c.Scalars[tag].Value; !near(got, v, 1e-9, 0) {
			t.Errorf("%s = %v, want %v", tag, got, v)
		}
	}
	if c.Errors[record.ErrHTTP] != 2 || c.Metrics[TagTTFT].Count != 4 || c.Key.StatusClass != "all" {
		t.Errorf("errors %v, TTFT count %d, status class %q", c.Errors, c.Metrics[TagTTFT].Count, c.Key.StatusClass)
	}
}
