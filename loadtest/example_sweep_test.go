package loadtest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
)

// A program sweeps the concurrency over 1 and 2 with the library: RunSweep lays the runs out
// as AIPerf's orchestrator does, the program builds and runs each run's spec in this
// process, with the run's concurrency, seed and folder, and RunSweep aggregates the runs'
// exports in memory into the sweep aggregate (sweep_aggregate/ under Base). What each aggregate
// holds is said through the note hook; the library prints nothing.
func ExampleRunSweep() {
	mock, err := mockllm.New(mockllm.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	server := httptest.NewServer(mock) // a stand-in for the inference server under test
	defer server.Close()
	dir, err := os.MkdirTemp("", "loadtest-sweep-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	body := []byte(`{"model":"m","stream":true,"max_completion_tokens":8,"messages":[{"role":"user","content":"Count to eight."}]}`)
	sweep := loadtest.Sweep{Base: dir, Levels: []int{1, 2}, Runs: 1, Seed: 7, Confidence: 0.95}
	run := func(ctx context.Context, cell loadtest.SweepCell) (*loadtest.Export, error) {
		res, err := loadtest.Run(ctx, loadtest.Spec{
			Class: record.ClassBench, Label: cell.Label, BaseURL: server.URL, Dir: cell.Dir, Seed: cell.Seed,
			Schedule: loadgen.Config{Concurrency: cell.Level, MaxRequests: 4, MaxInFlight: -1},
			Build: func(n int) (loadtest.Request, error) {
				return loadtest.Request{Path: "/v1/chat/completions", Body: body}, nil
			},
		})
		if err != nil {
			return nil, err
		}
		fmt.Printf("%s: %d requests completed\n", cell.Label, res.Counters.Completed)
		return &res.Export, nil
	}
	note := func(s string) { fmt.Println(strings.SplitN(s, ":", 2)[0]) } // less the file names
	if err := loadtest.RunSweep(context.Background(), sweep, run, note); err != nil {
		fmt.Println(err)
	}
	// Output:
	// concurrency_1: 4 requests completed
	// concurrency_2: 4 requests completed
	// sweep of 2 values aggregated
}
