// Command parquetgen writes one synthetic day of request records through llmtap's recorder
// twice, as JSONL and as Parquet (records and trace, the same records), for measuring the
// bytes each format takes per request and the time of queries over the Parquet: --requests
// arrivals spread evenly over 24 hours, --tenants tenants (Zipf-like weights), three models,
// log-normal TTFT (median 180 ms), output tokens (median 200) and inter-chunk gaps (one per
// output token, median 20 ms, as a streaming record holds them). docs/fleet.md gives the
// command.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

func main() {
	dir := flag.String("dir", "", "folder to write into: jsonl/ and parquet/ below it (created)")
	n := flag.Int("requests", 200_000, "requests over the day")
	tenants := flag.Int("tenants", 20, "tenants")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "parquetgen: --dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *n, *tenants); err != nil {
		fmt.Fprintln(os.Stderr, "parquetgen:", err)
		os.Exit(1)
	}
}

func run(dir string, n, tenants int) error {
	key := []byte(strings.Repeat("k", recorder.MinFleetKey))
	var recs []*recorder.Recorder
	for _, format := range []string{recorder.FormatJSONL, recorder.FormatParquet} {
		r, err := recorder.New(recorder.Options{Dir: filepath.Join(dir, format), Records: true, Trace: true,
			Format: format, FleetKey: key, Queue: 1 << 14, RotateAge: 48 * time.Hour})
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	lognormal := func(median, sigma float64) float64 { return median * math.Exp(sigma*rng.NormFloat64()) }
	// The day ended an hour ago: every arrival is in the past, as a recorder sees them.
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-25 * time.Hour)
	models := []string{"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-32b"}
	for i := range n {
		start := t0.Add(time.Duration(float64(i) / float64(n) * float64(24*time.Hour)))
		ttft := lognormal(180, 0.6)
		out := max(1, int(lognormal(200, 0.8)))
		gaps := make([]float64, min(out-1, 4096))
		total := ttft
		for k := range gaps {
			gaps[k] = math.Round(lognormal(20, 0.3)*1000) / 1000
			total += gaps[k]
		}
		itl := (total - ttft) / float64(max(len(gaps), 1))
		tenant := fmt.Sprintf("tenant-%02d", int(float64(tenants)*math.Pow(rng.Float64(), 2)))
		in := int64(lognormal(1000, 0.7))
		mk := func() *record.Record {
			ttftV, itlV, lat := ttft, itl, total
			return &record.Record{RequestID: fmt.Sprintf("req-%08d", i), Class: record.ClassLive, Model: models[i%3],
				Path: "/v1/chat/completions", API: "openai.chat", Stream: true, Status: 200, Finish: "stop", Start: start,
				Tenant: tenant, TTFTMs: &ttftV, ITLMs: &itlV, RequestLatencyMs: &lat, InterChunkMs: gaps, DurationMs: total + 0.2,
				InputTokens: in, InputTokensSource: record.SourceUsage,
				OutputTokens: int64(out), OutputTokensSource: record.SourceUsage, UsageOutputTokens: int64(out),
				ContentEvents: out, Events: out + 2, Bytes: int64(out * 180),
				ListCost: record.NewCost(float64(out)*8e-6, record.BasisListPrice, int64(out))}
		}
		for _, r := range recs {
			for !r.Submit(mk(), nil) {
				if err := r.Flush(context.Background()); err != nil {
					return err
				}
			}
		}
	}
	for _, r := range recs {
		if err := r.Close(context.Background()); err != nil {
			return err
		}
		st := r.Stats()
		fmt.Printf("%s: %d written, %d failed (a full queue is waited for, not dropped)\n", r.Options().Dir, st.Written, st.Errors)
	}
	return nil
}
