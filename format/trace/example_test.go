package trace_test

import (
	"fmt"
	"strings"

	"github.com/llmtap/llmtap/format/trace"
)

// A Mooncake trace (AIPerf's mooncake_trace) is read request by request; the format is found
// from the first line's keys.
func ExampleNewReader() {
	const mooncake = `{"timestamp": 0, "input_length": 812, "output_length": 64, "hash_ids": [0, 1]}
{"timestamp": 250, "input_length": 1024, "output_length": 128, "hash_ids": [0, 2], "session_id": "s1"}
{"timestamp": 1500, "input_length": 96, "output_length": 16, "hash_ids": [3], "session_id": "s1", "delay": 500}
`
	r, err := trace.NewReader(strings.NewReader(mooncake), trace.Options{Name: "example.jsonl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Println("format:", r.Format())
	for req, err := range r.All() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("at %v: %d tokens in, %d out, blocks %v, session %q after %v\n",
			req.Timestamp, req.InputLength, req.OutputLength, req.HashIDs, req.SessionID, req.Delay)
	}
	fmt.Println("lines:", r.Info().Lines)
	// Output:
	// format: mooncake
	// at 0s: 812 tokens in, 64 out, blocks [0 1], session "" after 0s
	// at 250ms: 1024 tokens in, 128 out, blocks [0 2], session "s1" after 0s
	// at 1.5s: 96 tokens in, 16 out, blocks [3], session "s1" after 500ms
	// lines: 3
}

// A bad line is an error that names the file, the line and the field.
func ExampleReader_Next() {
	r, err := trace.NewReader(strings.NewReader(`{"timestamp": 0, "input_length": 5, "output_length": 1}
{"timestamp": 10, "input_length": -5, "output_length": 1}
`), trace.Options{Name: "bad.jsonl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		req, err := r.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("read", req.InputLength, "tokens in")
	}
	// Output:
	// read 5 tokens in
	// bad.jsonl:2: input_length: "-5" is negative
}
