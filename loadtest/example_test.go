package loadtest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// A program benchmarks a server with the library: six streamed chat requests, two in flight,
// measured by the same engine as the proxy. The library prints nothing and serves nothing; the
// program watches the run through OnProgress and reads the results from the Result (the AIPerf
// exports are written into Dir as well).
func Example() {
	mock, err := mockllm.New(mockllm.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	server := httptest.NewServer(mock) // a stand-in for the inference server under test
	defer server.Close()
	dir, err := os.MkdirTemp("", "loadtest-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	body := []byte(`{"model":"m","stream":true,"max_completion_tokens":8,"messages":[{"role":"user","content":"Count to eight."}]}`)
	spec := loadtest.Spec{
		Class:    record.ClassBench,
		Label:    "example",
		BaseURL:  server.URL,
		Dir:      dir,
		Schedule: loadgen.Config{Concurrency: 2, MaxRequests: 6, MaxInFlight: -1},
		Total:    6,
		Build: func(n int) (loadtest.Request, error) {
			return loadtest.Request{Path: "/v1/chat/completions", Body: body}, nil
		},
		OnProgress: func(c loadgen.Counters, final bool) {
			if final {
				fmt.Printf("sent %d, completed %d, errors %d\n", c.Sent, c.Completed, c.Errors)
			}
		},
	}
	res, err := loadtest.Run(context.Background(), spec)
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
