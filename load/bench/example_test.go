package bench_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// A program benchmarks a server with the library: six streamed chat requests, two in flight,
// measured by the same engine as the proxy. The library prints nothing and serves nothing; the
// program watches the run through OnProgress and reads the results from the Result (the AIPerf
// exports are written into Dir as well).
func Example() {
	url, dir, stop, err := exampleServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	spec := bench.Spec{
		Class:    record.ClassBench,
		Label:    "example",
		BaseURL:  url,
		Dir:      dir,
		Schedule: gen.Config{Concurrency: 2, MaxRequests: 6, MaxInFlight: -1},
		Total:    6,
		Build: func(n int) (bench.Request, error) {
			return bench.Request{Path: "/v1/chat/completions", Body: exampleBody}, nil
		},
		OnProgress: func(c gen.Counters, final bool) {
			if final {
				fmt.Printf("sent %d, completed %d, errors %d\n", c.Sent, c.Completed, c.Errors)
			}
		},
	}
	res, err := bench.Run(context.Background(), spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := res.Export.Group
	fmt.Printf("requests %.0f, output tokens per request %.0f\n",
		g.Scalars[stats.TagRequestCount].Value, g.Metrics[stats.TagOutputSeqLength].Avg)
	for _, f := range res.Files[:3] {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// sent 6, completed 6, errors 0
	// requests 6, output tokens per request 8
	// profile_export_aiperf.json
	// profile_export_aiperf.csv
	// profile_export.jsonl
}

// A program sweeps the concurrency over 1 and 2 with the library: RunSweep lays the runs out
// as AIPerf's orchestrator does, the program builds and runs each run's spec in this
// process, with the run's concurrency, seed and folder, and RunSweep aggregates the runs'
// exports in memory into the sweep aggregate (sweep_aggregate/ under Base). What each aggregate
// holds is said through the note hook; the library prints nothing.
func ExampleRunSweep() {
	url, dir, stop, err := exampleServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	sweep := bench.Sweep{Base: dir, Levels: []int{1, 2}, Runs: 1, Seed: 7, Confidence: 0.95}
	run := func(ctx context.Context, cell bench.SweepCell) (*aiperf.Export, error) {
		res, err := bench.Run(ctx, bench.Spec{
			Class: record.ClassBench, Label: cell.Label, BaseURL: url, Dir: cell.Dir, Seed: cell.Seed,
			Schedule: gen.Config{Concurrency: cell.Level, MaxRequests: 4, MaxInFlight: -1},
			Build: func(n int) (bench.Request, error) {
				return bench.Request{Path: "/v1/chat/completions", Body: exampleBody}, nil
			},
		})
		if err != nil {
			return nil, err
		}
		fmt.Printf("%s: %d requests completed\n", cell.Label, res.Counters.Completed)
		return &res.Export, nil
	}
	note := func(s string) { fmt.Println(strings.SplitN(s, ":", 2)[0]) } // less the file names
	if err := bench.RunSweep(context.Background(), sweep, run, note); err != nil {
		fmt.Println(err)
	}
	// Output:
	// concurrency_1: 4 requests completed
	// concurrency_2: 4 requests completed
	// sweep of 2 values aggregated
}

// exampleBody is a streamed chat request for eight tokens.
var exampleBody = []byte(`{"model":"m","stream":true,"max_completion_tokens":8,"messages":[{"role":"user","content":"Count to eight."}]}`)

// exampleServer starts the mock inference server, a stand-in for the server under test, and a
// folder for the exports; stop ends both.
func exampleServer() (url, dir string, stop func(), err error) {
	mock, err := mock.New(mock.Config{})
	if err != nil {
		return "", "", nil, err
	}
	server := httptest.NewServer(mock)
	if dir, err = os.MkdirTemp("", "loadtest-example-"); err != nil {
		server.Close()
		return "", "", nil, err
	}
	return server.URL, dir, func() { server.Close(); os.RemoveAll(dir) }, nil
}
