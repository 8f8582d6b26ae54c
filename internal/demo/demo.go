// Package demo builds the parts of `llmtap demo`: the Caddy config that puts llmtap in front of
// the mock inference server (Config), the file every record is written to (Records), the
// Poisson load of streaming chat completions (Options.Load), the run's description for AIPerf's
// files (Options.RunInfo) and the admin API's summary (SummaryJSON) and its results folder (WriteResults). It neither prints nor
// listens: the command starts the mock and Caddy, sends the load and prints.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	// The demo's Caddyfile needs the adapter, reverse_proxy and the llmtap directive even when
	// this package is used outside cmd/llmtap (the command's tests).
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap/caddyfile"

	"github.com/llmtap/llmtap/api/client"
	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/privatefile"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Options are the demo's load and where its results go.
type Options struct {
	// Duration is how long the load is sent.
	Duration time.Duration
	// Rate is the requests per second of the Poisson arrivals.
	Rate float64
	// MaxTokens is each request's max_tokens (the mock answers exactly this many).
	MaxTokens int
	// NoUsageEvery makes every N-th request omit stream_options.include_usage, so that
	// llmtap's tokenizer counts its tokens (0: never).
	NoUsageEvery int
	// Seed seeds the arrival schedule.
	Seed uint64
	// Out is the folder the summary and records are written to.
	Out string
	// Mock configures the mock inference server.
	Mock mock.Config
}

// caddyfile is the Caddyfile the demo runs: llmtap in front of the mock server, with the admin
// API on its own loopback port.
const caddyfile = `{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	log {
		level ERROR
	}
}

http://%s {
	llmtap
	reverse_proxy %s
}
`

// Config returns the demo's Caddy config as JSON: llmtap and reverse_proxy to mockURL on
// proxyAddr, the admin API on adminAddr; with the adapter's warnings.
func Config(adminAddr, proxyAddr, mockURL string) ([]byte, []caddyconfig.Warning, error) {
	cf := fmt.Sprintf(caddyfile, adminAddr, proxyAddr, strings.TrimPrefix(mockURL, "http://"))
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "demo"})
	if err != nil {
		return nil, nil, fmt.Errorf("adapting the demo Caddyfile: %w", err)
	}
	return cfg, warnings, nil
}

// Records is the record sink that writes every record as a JSON line to a file. The pipeline
// calls Consume from its own goroutine.
type Records struct {
	Path string
	file *os.File
	mu   sync.Mutex
	enc  *json.Encoder
	err  error // the first write error
}

// CreateRecords creates (or empties) the records file at path, with mode 0600.
func CreateRecords(path string) (*Records, error) {
	f, err := privatefile.Create(path)
	if err != nil {
		return nil, err
	}
	return &Records{Path: path, file: f, enc: json.NewEncoder(f)}, nil
}

// Consume writes r as one line.
func (d *Records) Consume(r *record.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enc.Encode(r); err != nil && d.err == nil {
		d.err = err
	}
}

// Err returns the first error writing a record, nil when none.
func (d *Records) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Close closes the file.
func (d *Records) Close() error { return d.file.Close() }

// Load returns the demo's load to url: Poisson arrivals at o.Rate for o.Duration, streaming
// chat completions of mock-model (every o.NoUsageEvery-th without a usage chunk), sent by
// client, with progress called every progressEvery.
func (o Options) Load(url string, client *http.Client, progressEvery time.Duration, progress func(gen.Counters)) gen.Config {
	withUsage, withoutUsage := chatBody(o.MaxTokens, true), chatBody(o.MaxTokens, false)
	return gen.Config{
		Arrivals: gen.NewPoisson(o.Rate, rand.New(rand.NewPCG(o.Seed, 0x11a7a9))),
		Request: func(ctx context.Context, n int) (*http.Request, error) {
			body := withUsage
			if o.NoUsageEvery > 0 && n%o.NoUsageEvery == o.NoUsageEvery-1 {
				body = withoutUsage
			}
			return gen.ChatRequest(url, body)(ctx, n)
		},
		Client:        client,
		Duration:      o.Duration,
		ProgressEvery: progressEvery,
		Progress:      progress,
	}
}

func chatBody(maxTokens int, includeUsage bool) []byte {
	body := map[string]any{
		"model":      "mock-model",
		"stream":     true,
		"max_tokens": maxTokens,
		"messages":   []map[string]string{{"role": "user", "content": "Tell me a story about a lighthouse keeper."}},
	}
	if includeUsage {
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(body)
	return b
}

// RunInfo describes the demo's load for the input_config of AIPerf's JSON file: streaming
// chat completions of mock-model at a Poisson rate for a duration, sent to url by the command
// line args.
func (o Options) RunInfo(url string, args []string) aiperf.RunInfo {
	info := aiperf.RunInfo{Seed: o.Seed, CLICommand: strings.Join(append([]string{"llmtap", "demo"}, args...), " "),
		Mode: "request_rate", Flags: map[string]any{"rate": o.Rate, "duration": o.Duration.Seconds(), "max_tokens": o.MaxTokens}}
	in := &info.Input
	in.Endpoint.ModelNames, in.Endpoint.Type, in.Endpoint.Streaming, in.Endpoint.URL = []string{"mock-model"}, "chat", true, url
	in.Input.RandomSeed = o.Seed
	rate := o.Rate
	in.Loadgen.RequestRate, in.Loadgen.RequestRateMode = &rate, "poisson"
	if d := o.Duration.Seconds(); d >= 1 { // AIPerf's minimum
		in.Loadgen.BenchmarkDuration = &d
	}
	in.Output.ArtifactDirectory = o.Out
	in.CLICommand = info.CLICommand
	return info
}

// Cumulative is summary with only its cumulative groups (everything since the start).
func Cumulative(summary stats.Summary) stats.Summary {
	cum := stats.Summary{Time: summary.Time, Window: summary.Window, SLOs: summary.SLOs}
	for _, g := range summary.Groups {
		if g.Window == stats.WindowCumulative {
			cum.Groups = append(cum.Groups, g)
		}
	}
	return cum
}

// WriteResults writes the admin API's summary (summaryJSON) and, when there was live traffic,
// AIPerf's exports (export) into the folder out, each with mode 0600; it returns the paths it
// wrote.
func WriteResults(out string, summaryJSON []byte, export aiperf.Export) ([]string, error) {
	p := filepath.Join(out, "summary.json")
	if err := os.WriteFile(p, summaryJSON, 0o600); err != nil {
		return nil, err
	}
	files := []string{p}
	if len(export.Others) > 0 { // live traffic came
		exported, err := aiperf.WriteExports(out, export)
		if err != nil {
			return nil, err
		}
		files = append(files, exported...)
	}
	return files, nil
}

// SummaryJSON reads GET /llmtap/summary from the admin API at adminAddr, as a user would; a
// status other than 200 is an error.
func SummaryJSON(adminAddr string) ([]byte, error) {
	return client.Get(context.Background(), http.DefaultClient, "http://"+adminAddr+"/llmtap/summary")
}
