package commands

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"golang.org/x/term"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/demo"
	"github.com/llmtap/llmtap/internal/loopback"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// runDemo runs the demo's steps in order: parse the flags, start the mock, start Caddy with
// llmtap in front of it, record every request to a file, send the load, and write the results.
func runDemo(fs *flag.FlagSet, args []string) (int, error) {
	o, err := parseDemoFlags(fs, args)
	if err != nil {
		return 2, err
	}
	if err := os.MkdirAll(o.Out, 0o700); err != nil {
		return 1, fmt.Errorf("creating the output folder: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// 1. The mock inference server.
	mock, err := mock.New(o.Mock)
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
	recs, err := demo.CreateRecords(filepath.Join(o.Out, "records.jsonl"))
	if err != nil {
		return 1, err
	}
	defer recs.Close()
	tp.AddSink(recs)
	// AIPerf's files count the same records by AIPerf's rules (aiperf.Records).
	aiperf := aiperf.NewRecords(record.ClassLive, nil)
	tp.AddSink(aiperf)

	fmt.Fprintf(os.Stderr, "mock server  %s (TTFT %v, ITL %v)\nllmtap proxy http://%s  (admin API http://%s/llmtap/summary)\n",
		mockURL, o.Mock.TTFT, o.Mock.ITL, proxyAddr, adminAddr)
	fmt.Fprintf(os.Stderr, "load         %.1f req/s Poisson for %v, %d-token streaming chat completions\n\n", o.Rate, o.Duration, o.MaxTokens)

	// 3. Load.
	url := "http://" + proxyAddr + "/v1/chat/completions"
	start := time.Now()
	counters := runDemoLoad(ctx, o, url)
	end := time.Now()

	// 4. Results: wait for the pipeline, then read the summary from the admin API, as a user would.
	tp.Flush()
	export := aiperf.Export(o.RunInfo(url, args), start, end, ctx.Err() != nil)
	summaryJSON, err := demo.SummaryJSON(adminAddr)
	if err != nil {
		return 1, err
	}
	if err := stats.WriteTable(termsafe.Writer(os.Stdout), demo.Cumulative(tp.Stats().Summary())); err != nil {
		return 1, err
	}
	files, err := demo.WriteResults(o.Out, summaryJSON, export)
	if err != nil {
		return 1, err
	}
	if err := recs.Err(); err != nil {
		return 1, fmt.Errorf("writing records: %w", err)
	}
	fmt.Println("\nwrote:")
	for _, f := range append([]string{recs.Path}, files...) {
		fmt.Println("  " + f)
	}
	if counters.Completed == 0 {
		return 1, fmt.Errorf("no request completed")
	}
	return 0, nil
}

// parseDemoFlags defines the demo's flags on fs and parses args; an output folder left empty is
// named after the current time.
func parseDemoFlags(fs *flag.FlagSet, args []string) (demo.Options, error) {
	var o demo.Options
	fs.DurationVar(&o.Duration, "duration", 15*time.Second, "how long to send load")
	fs.Float64Var(&o.Rate, "rate", 20, "requests per second (Poisson arrivals)")
	fs.IntVar(&o.MaxTokens, "max-tokens", 64, "max_tokens of each request (the mock answers exactly this many)")
	fs.IntVar(&o.NoUsageEvery, "no-usage-every", 5, "every N-th request omits stream_options.include_usage, so its tokens are counted by llmtap's tokenizer (0 = never)")
	fs.Uint64Var(&o.Seed, "load-seed", 1, "seed of the arrival schedule (--seed seeds the mock server)")
	fs.StringVar(&o.Out, "output", "", "folder for the summary and records (default ./llmtap-demo-<time>)")
	mockCfg := mock.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.Duration <= 0 || o.Rate <= 0 || o.MaxTokens <= 0 {
		return o, fmt.Errorf("--duration, --rate and --max-tokens must be positive")
	}
	if o.Out == "" {
		o.Out = "llmtap-demo-" + time.Now().Format("20060102-150405")
	}
	o.Mock = *mockCfg
	return o, nil
}

// startDemoMock warms mock and serves it on a free loopback port.
func startDemoMock(mock *mock.Server) (url string, stop func() error, err error) {
	// Warm up before measuring: the mock and llmtap load their tokenizers on first use, which
	// made the first responses tens of milliseconds late (a TTFT p99 of ~100 ms for a 20 ms
	// mock in the first table).
	mock.Warm()
	if err := tokens.Warm(); err != nil {
		return "", nil, fmt.Errorf("loading the tokenizer: %w", err)
	}
	return mock.Start("127.0.0.1:0")
}

// startDemoProxy loads the demo's Caddy config (demo.Config) in front of mockURL on free loopback
// ports and returns the proxy's and the admin API's addresses. The caller stops Caddy.
func startDemoProxy(mockURL string) (proxyAddr, adminAddr string, err error) {
	if proxyAddr, err = loopback.FreeAddr(); err != nil {
		return "", "", err
	}
	if adminAddr, err = loopback.FreeAddr(); err != nil {
		return "", "", err
	}
	cfgJSON, warnings, err := demo.Config(adminAddr, proxyAddr, mockURL)
	if err != nil {
		return "", "", err
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "warning: %s\n", w.Message)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		return "", "", fmt.Errorf("starting Caddy: %w", err)
	}
	return proxyAddr, adminAddr, nil
}

// runDemoLoad sends the demo's load (demo.Options.Load) to url, printing its progress on
// standard error, and returns the final counters.
func runDemoLoad(ctx context.Context, o demo.Options, url string) gen.Counters {
	// On a terminal the progress line rewrites itself in place; in a log it is a line a second.
	progressEvery, progressStart, progressEnd := time.Second, "", "\n"
	if term.IsTerminal(int(os.Stderr.Fd())) {
		progressEvery, progressStart, progressEnd = 200*time.Millisecond, "\r", "   "
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	counters := gen.Run(ctx, o.Load(url, client, progressEvery, func(c gen.Counters) {
		fmt.Fprint(os.Stderr, progressStart, progressLine(c, o.Duration), progressEnd)
	}))
	fmt.Fprint(os.Stderr, progressStart, progressLine(counters, o.Duration), "\n\n")
	return counters
}

// progressLine is the live status of the load.
func progressLine(c gen.Counters, total time.Duration) string {
	return fmt.Sprintf("[%5.1fs / %v] sent %d  completed %d  in flight %d  errors %d  dropped %d",
		c.Elapsed.Seconds(), total, c.Sent, c.Completed, c.InFlight, c.Errors, c.Dropped)
}
