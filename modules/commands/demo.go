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
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
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

func runDemo(fs *flag.FlagSet, args []string) (int, error) {
	// On a terminal the progress line rewrites itself in place; in a log it is a line a second.
	progressEvery, progressStart, progressEnd := time.Second, "", "\n"
	if term.IsTerminal(int(os.Stderr.Fd())) {
		progressEvery, progressStart, progressEnd = 200*time.Millisecond, "\r", "   "
	}
	duration := fs.Duration("duration", 15*time.Second, "how long to send load")
	rate := fs.Float64("rate", 20, "requests per second (Poisson arrivals)")
	maxTokens := fs.Int("max-tokens", 64, "max_tokens of each request (the mock answers exactly this many)")
	noUsageEvery := fs.Int("no-usage-every", 5, "every N-th request omits stream_options.include_usage, so its tokens are counted by llmtap's tokenizer (0 = never)")
	seed := fs.Uint64("load-seed", 1, "seed of the arrival schedule (--seed seeds the mock server)")
	out := fs.String("output", "", "folder for the summary and records (default ./llmtap-demo-<time>)")
	mockCfg := mockllm.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *duration <= 0 || *rate <= 0 || *maxTokens <= 0 {
		return 2, fmt.Errorf("--duration, --rate and --max-tokens must be positive")
	}
	if *out == "" {
		*out = "llmtap-demo-" + time.Now().Format("20060102-150405")
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		return 1, fmt.Errorf("creating the output folder: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// 1. The mock inference server.
	mock, err := mockllm.New(*mockCfg)
	if err != nil {
		return 2, err
	}
	defer mock.Close()
	// Warm up before measuring: the mock and llmtap load their tokenizers on first use, which
	// made the first responses tens of milliseconds late (a TTFT p99 of ~100 ms for a 20 ms
	// mock in the first table).
	mock.Warm()
	if err := tokens.Warm(); err != nil {
		return 1, fmt.Errorf("loading the tokenizer: %w", err)
	}
	mockURL, stopMock, err := mock.Start("127.0.0.1:0")
	if err != nil {
		return 1, err
	}
	defer stopMock()

	// 2. Caddy with llmtap in front of it.
	proxyAddr, err := loopback.FreeAddr()
	if err != nil {
		return 1, err
	}
	adminAddr, err := loopback.FreeAddr()
	if err != nil {
		return 1, err
	}
	caddyfile := fmt.Sprintf(demoConfig, adminAddr, proxyAddr, strings.TrimPrefix(mockURL, "http://"))
	cfgJSON, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "demo"})
	if err != nil {
		return 1, fmt.Errorf("adapting the demo Caddyfile: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "warning: %s\n", w.Message)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		return 1, fmt.Errorf("starting Caddy: %w", err)
	}
	defer caddy.Stop() //nolint:errcheck
	tp := llmtap.ActiveTap()
	if tp == nil {
		return 1, fmt.Errorf("the llmtap handler did not start")
	}

	recordsPath := filepath.Join(*out, "records.jsonl")
	recordsFile, err := os.OpenFile(recordsPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 1, err
	}
	defer recordsFile.Close()
	var recMu sync.Mutex
	enc := json.NewEncoder(recordsFile)
	var recErr error
	tp.AddSink(sinkFunc(func(r *record.Record) {
		recMu.Lock()
		defer recMu.Unlock()
		if err := enc.Encode(r); err != nil && recErr == nil {
			recErr = err
		}
	}))

	fmt.Fprintf(os.Stderr, "mock server  %s (TTFT %v, ITL %v)\nllmtap proxy http://%s  (admin API http://%s/llmtap/summary)\n",
		mockURL, mockCfg.TTFT, mockCfg.ITL, proxyAddr, adminAddr)
	fmt.Fprintf(os.Stderr, "load         %.1f req/s Poisson for %v, %d-token streaming chat completions\n\n", *rate, *duration, *maxTokens)

	// 3. Load.
	withUsage := chatBody(*maxTokens, true)
	withoutUsage := chatBody(*maxTokens, false)
	url := "http://" + proxyAddr + "/v1/chat/completions"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	counters := loadgen.Run(ctx, loadgen.Config{
		Arrivals: loadgen.NewPoisson(*rate, rand.New(rand.NewPCG(*seed, 0x11a7a9))),
		Request: func(ctx context.Context, n int) (*http.Request, error) {
			body := withUsage
			if *noUsageEvery > 0 && n%*noUsageEvery == *noUsageEvery-1 {
				body = withoutUsage
			}
			return loadgen.ChatRequest(url, body)(ctx, n)
		},
		Client:        client,
		Duration:      *duration,
		ProgressEvery: progressEvery,
		Progress: func(c loadgen.Counters) {
			fmt.Fprint(os.Stderr, progressStart, progressLine(c, *duration), progressEnd)
		},
	})
	fmt.Fprint(os.Stderr, progressStart, progressLine(counters, *duration), "\n\n")

	// 4. Results: wait for the pipeline, then read the summary from the admin API, as a user would.
	tp.Flush()
	summaryJSON, err := get("http://" + adminAddr + "/llmtap/summary")
	if err != nil {
		return 1, err
	}
	summary := tp.Stats().Summary()
	cumulative := stats.Summary{Time: summary.Time, Window: summary.Window, SLOs: summary.SLOs}
	for _, g := range summary.Groups {
		if g.Window == stats.WindowCumulative {
			cumulative.Groups = append(cumulative.Groups, g)
		}
	}
	if err := stats.WriteTable(os.Stdout, cumulative); err != nil {
		return 1, err
	}

	files := []string{recordsPath}
	write := func(name string, fill func(io.Writer) error) error {
		p := filepath.Join(*out, name)
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
		return 1, err
	}
	if g, ok := liveGroup(cumulative); ok {
		if err := write("profile_export_aiperf.json", func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(g)
		}); err != nil {
			return 1, err
		}
		if err := write("profile_export_aiperf.csv", func(w io.Writer) error { return stats.WriteCSV(w, g) }); err != nil {
			return 1, err
		}
	}
	recMu.Lock()
	err = recErr
	recMu.Unlock()
	if err != nil {
		return 1, fmt.Errorf("writing records: %w", err)
	}
	fmt.Println("\nwrote:")
	for _, f := range files {
		fmt.Println("  " + f)
	}
	if counters.Completed == 0 {
		return 1, fmt.Errorf("no request completed")
	}
	return 0, nil
}

// progressLine is the live status of the load.
func progressLine(c loadgen.Counters, total time.Duration) string {
	return fmt.Sprintf("[%5.1fs / %v] sent %d  completed %d  in flight %d  errors %d  dropped %d",
		c.Elapsed.Seconds(), total, c.Sent, c.Completed, c.InFlight, c.Errors, c.Dropped)
}

// liveGroup picks the cumulative group of successful live traffic, the one AIPerf's export
// describes.
func liveGroup(s stats.Summary) (stats.GroupSummary, bool) {
	for _, g := range s.Groups {
		if g.Key.Class == record.ClassLive && g.Key.StatusClass == "2xx" {
			return g, true
		}
	}
	return stats.GroupSummary{}, false
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

type sinkFunc func(r *record.Record)

func (f sinkFunc) Consume(r *record.Record) { f(r) }
