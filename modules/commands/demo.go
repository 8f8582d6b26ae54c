package commands

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"golang.org/x/term"

	// The demo's Caddyfile needs the adapter, reverse_proxy and the llmtap directive even when
	// this package is used outside cmd/llmtap (its tests).
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/llmtap/llmtap/caddyfile"

	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// demoConfig is the Caddyfile the demo runs: llmtap in front of the mock server, with the admin
// API on its own loopback port.
const demoConfig = `{
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

// demoOptions are the demo's flags.
type demoOptions struct {
	duration     time.Duration
	rate         float64
	maxTokens    int
	noUsageEvery int
	seed         uint64
	out          string
	mock         mockllm.Config
}

// runDemo runs the demo's steps in order: parse the flags, start the mock, start Caddy with
// llmtap in front of it, record every request to a file, send the load, and write the results.
func runDemo(fs *flag.FlagSet, args []string) (int, error) {
	o, err := parseDemoFlags(fs, args)
	if err != nil {
		return 2, err
	}
	if err := os.MkdirAll(o.out, 0o700); err != nil {
		return 1, fmt.Errorf("creating the output folder: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// 1. The mock inference server.
	mock, err := mockllm.New(o.mock)
	if err != nil {
		return 2, err
	}
	defer mock.Close()
	mockURL, stopMock, err := startDemoMock(mock)
	if err != nil {
		return 1, err
	}
	defer stopMock()

	// 2. Caddy with llmtap in front of it, its records going to a file.
	proxyAddr, adminAddr, err := startDemoProxy(mockURL)
	if err != nil {
		return 1, err
	}
	defer caddy.Stop()                                          //nolint:errcheck
	app, err := caddy.ActiveContext().AppIfConfigured("llmtap") // the app the handler reaches
	if err != nil {
		return 1, fmt.Errorf("the llmtap handler did not start: %w", err)
	}
	tp := app.(*llmtap.App).Process().Tap()
	recs, err := openDemoRecords(filepath.Join(o.out, "records.jsonl"))
	if err != nil {
		return 1, err
	}
	defer recs.file.Close()
	tp.AddSink(recs)
	// AIPerf's files count the same records by AIPerf's rules (loadtest.AIPerfRecords).
	aiperf := loadtest.NewAIPerfRecords(record.ClassLive, nil)
	tp.AddSink(aiperf)

	fmt.Fprintf(os.Stderr, "mock server  %s (TTFT %v, ITL %v)\nllmtap proxy http://%s  (admin API http://%s/llmtap/summary)\n",
		mockURL, o.mock.TTFT, o.mock.ITL, proxyAddr, adminAddr)
	fmt.Fprintf(os.Stderr, "load         %.1f req/s Poisson for %v, %d-token streaming chat completions\n\n", o.rate, o.duration, o.maxTokens)

	// 3. Load.
	url := "http://" + proxyAddr + "/v1/chat/completions"
	start := time.Now()
	counters := runDemoLoad(ctx, o, url)
	end := time.Now()

	// 4. Results: wait for the pipeline, then read the summary from the admin API, as a user would.
	tp.Flush()
	export := aiperf.Export(demoRunInfo(o, url, args), start, end, ctx.Err() != nil)
	files, err := writeDemoResults(tp, adminAddr, o.out, export)
	if err != nil {
		return 1, err
	}
	if err := recs.Err(); err != nil {
		return 1, fmt.Errorf("writing records: %w", err)
	}
	fmt.Println("\nwrote:")
	for _, f := range append([]string{recs.path}, files...) {
		fmt.Println("  " + f)
	}
	if counters.Completed == 0 {
		return 1, fmt.Errorf("no request completed")
	}
	return 0, nil
}

// parseDemoFlags defines the demo's flags on fs and parses args; an output folder left empty is
// named after the current time.
func parseDemoFlags(fs *flag.FlagSet, args []string) (demoOptions, error) {
	duration := fs.Duration("duration", 15*time.Second, "how long to send load")
	rate := fs.Float64("rate", 20, "requests per second (Poisson arrivals)")
	maxTokens := fs.Int("max-tokens", 64, "max_tokens of each request (the mock answers exactly this many)")
	noUsageEvery := fs.Int("no-usage-every", 5, "every N-th request omits stream_options.include_usage, so its tokens are counted by llmtap's tokenizer (0 = never)")
	seed := fs.Uint64("load-seed", 1, "seed of the arrival schedule (--seed seeds the mock server)")
	out := fs.String("output", "", "folder for the summary and records (default ./llmtap-demo-<time>)")
	mockCfg := mockllm.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return demoOptions{}, err
	}
	if *duration <= 0 || *rate <= 0 || *maxTokens <= 0 {
		return demoOptions{}, fmt.Errorf("--duration, --rate and --max-tokens must be positive")
	}
	if *out == "" {
		*out = "llmtap-demo-" + time.Now().Format("20060102-150405")
	}
	return demoOptions{duration: *duration, rate: *rate, maxTokens: *maxTokens, noUsageEvery: *noUsageEvery,
		seed: *seed, out: *out, mock: *mockCfg}, nil
}

// startDemoMock warms mock and serves it on a free loopback port.
func startDemoMock(mock *mockllm.Server) (url string, stop func() error, err error) {
	// Warm up before measuring: the mock and llmtap load their tokenizers on first use, which
	// made the first responses tens of milliseconds late (a TTFT p99 of ~100 ms for a 20 ms
	// mock in the first table).
	mock.Warm()
	if err := tokens.Warm(); err != nil {
		return "", nil, fmt.Errorf("loading the tokenizer: %w", err)
	}
	return mock.Start("127.0.0.1:0")
}

// startDemoProxy loads the demo's Caddyfile (demoConfig) in front of mockURL on free loopback
// ports and returns the proxy's and the admin API's addresses. The caller stops Caddy.
func startDemoProxy(mockURL string) (proxyAddr, adminAddr string, err error) {
	if proxyAddr, err = loopback.FreeAddr(); err != nil {
		return "", "", err
	}
	if adminAddr, err = loopback.FreeAddr(); err != nil {
		return "", "", err
	}
	caddyfile := fmt.Sprintf(demoConfig, adminAddr, proxyAddr, strings.TrimPrefix(mockURL, "http://"))
	cfgJSON, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "demo"})
	if err != nil {
		return "", "", fmt.Errorf("adapting the demo Caddyfile: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "warning: %s\n", w.Message)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		return "", "", fmt.Errorf("starting Caddy: %w", err)
	}
	return proxyAddr, adminAddr, nil
}

// demoRecords is the record sink that writes every record as a JSON line to a file. The
// pipeline calls Consume from its own goroutine.
type demoRecords struct {
	path string
	file *os.File
	mu   sync.Mutex
	enc  *json.Encoder
	err  error // the first write error
}

// openDemoRecords creates (or empties) the records file at path.
func openDemoRecords(path string) (*demoRecords, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &demoRecords{path: path, file: f, enc: json.NewEncoder(f)}, nil
}

func (d *demoRecords) Consume(r *record.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enc.Encode(r); err != nil && d.err == nil {
		d.err = err
	}
}

// Err returns the first error writing a record, nil when none.
func (d *demoRecords) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// runDemoLoad sends the demo's Poisson load of streaming chat completions to url for
// o.duration, printing its progress on standard error, and returns the final counters.
func runDemoLoad(ctx context.Context, o demoOptions, url string) loadgen.Counters {
	// On a terminal the progress line rewrites itself in place; in a log it is a line a second.
	progressEvery, progressStart, progressEnd := time.Second, "", "\n"
	if term.IsTerminal(int(os.Stderr.Fd())) {
		progressEvery, progressStart, progressEnd = 200*time.Millisecond, "\r", "   "
	}
	withUsage := chatBody(o.maxTokens, true)
	withoutUsage := chatBody(o.maxTokens, false)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	counters := loadgen.Run(ctx, loadgen.Config{
		Arrivals: loadgen.NewPoisson(o.rate, rand.New(rand.NewPCG(o.seed, 0x11a7a9))),
		Request: func(ctx context.Context, n int) (*http.Request, error) {
			body := withUsage
			if o.noUsageEvery > 0 && n%o.noUsageEvery == o.noUsageEvery-1 {
				body = withoutUsage
			}
			return loadgen.ChatRequest(url, body)(ctx, n)
		},
		Client:        client,
		Duration:      o.duration,
		ProgressEvery: progressEvery,
		Progress: func(c loadgen.Counters) {
			fmt.Fprint(os.Stderr, progressStart, progressLine(c, o.duration), progressEnd)
		},
	})
	fmt.Fprint(os.Stderr, progressStart, progressLine(counters, o.duration), "\n\n")
	return counters
}

// demoRunInfo describes the demo's load for the input_config of AIPerf's JSON file: streaming
// chat completions of mock-model at a Poisson rate for a duration.
func demoRunInfo(o demoOptions, url string, args []string) loadtest.RunInfo {
	info := loadtest.RunInfo{Seed: o.seed, CLICommand: strings.Join(append([]string{"llmtap", "demo"}, args...), " "),
		Mode: "request_rate", Flags: map[string]any{"rate": o.rate, "duration": o.duration.Seconds(), "max_tokens": o.maxTokens}}
	in := &info.Input
	in.Endpoint.ModelNames, in.Endpoint.Type, in.Endpoint.Streaming, in.Endpoint.URL = []string{"mock-model"}, "chat", true, url
	in.Input.RandomSeed = o.seed
	rate := o.rate
	in.Loadgen.RequestRate, in.Loadgen.RequestRateMode = &rate, "poisson"
	if d := o.duration.Seconds(); d >= 1 { // AIPerf's minimum
		in.Loadgen.BenchmarkDuration = &d
	}
	in.Output.ArtifactDirectory = o.out
	in.CLICommand = info.CLICommand
	return info
}

// writeDemoResults prints the cumulative summary table and writes the admin API's summary and,
// when there was live traffic, AIPerf's exports (export) into the folder out; it returns the
// paths it wrote.
func writeDemoResults(tp *tap.Tap, adminAddr, out string, export loadtest.Export) (files []string, err error) {
	summaryJSON, err := get("http://" + adminAddr + "/llmtap/summary")
	if err != nil {
		return nil, err
	}
	summary := tp.Stats().Summary()
	cumulative := stats.Summary{Time: summary.Time, Window: summary.Window, SLOs: summary.SLOs}
	for _, g := range summary.Groups {
		if g.Window == stats.WindowCumulative {
			cumulative.Groups = append(cumulative.Groups, g)
		}
	}
	if err := stats.WriteTable(termsafe.Writer(os.Stdout), cumulative); err != nil {
		return nil, err
	}

	write := func(name string, fill func(io.Writer) error) error {
		p := filepath.Join(out, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if err := fill(f); err != nil {
			f.Close()
			return err
		}
		files = append(files, p)
		return f.Close()
	}
	if err := write("summary.json", func(w io.Writer) error { _, err := w.Write(summaryJSON); return err }); err != nil {
		return nil, err
	}
	if len(export.Others) > 0 { // live traffic came
		exported, err := loadtest.WriteExports(out, export)
		if err != nil {
			return nil, err
		}
		files = append(files, exported...)
	}
	return files, nil
}

// progressLine is the live status of the load.
func progressLine(c loadgen.Counters, total time.Duration) string {
	return fmt.Sprintf("[%5.1fs / %v] sent %d  completed %d  in flight %d  errors %d  dropped %d",
		c.Elapsed.Seconds(), total, c.Sent, c.Completed, c.InFlight, c.Errors, c.Dropped)
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

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b, nil
}
