package trace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/internal/limits"
)

// writeTrace writes lines to a file in a test folder and returns its path.
func writeTrace(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ids returns a JSON array of n small ids.
func ids(n int) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i%10)
	}
	b.WriteByte(']')
	return b.String()
}

// TestHostileNumbersRefused: a token count over limits.MaxTokens (the 1e8 that took replay to
// 9.9 GB), a row with more hash ids than limits.MaxHashIDs, and a line of more tiny JSON values
// than the parser may hold (the 30 M hash ids that took trace stats to 8.4 GB) are each refused
// with the file, the line and the limit, before anything is built from them.
func TestHostileNumbersRefused(t *testing.T) {
	t.Parallel()
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}`
	for _, c := range []struct {
		name, line, want string
	}{
		{"input_length", `{"timestamp": 1, "input_length": 1e8, "output_length": 5}`, "limits.MaxTokens"},
		{"input_length integer", `{"timestamp": 1, "input_length": 2097153, "output_length": 5}`, "limits.MaxTokens"},
		{"output_length", `{"timestamp": 1, "input_length": 1, "output_length": 100000000}`, "limits.MaxTokens"},
		{"hash_ids", `{"timestamp": 1, "input_length": 1, "hash_ids": ` + ids(limits.MaxHashIDs+1) + `}`, "limits.MaxHashIDs"},
		{"values", `{"timestamp": 1, "input_length": 1, "x": ` + ids(maxLineValues+1) + `}`, "JSON values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := writeTrace(t, ok, c.line)
			_, _, err := ReadFile(p, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p+":2") {
				t.Fatalf("error %v: want %s:2 naming %s", err, p, c.want)
			}
		})
	}
	// At the limits, a row is read.
	p := writeTrace(t, fmt.Sprintf(`{"timestamp": 1, "input_length": %d, "output_length": %d, "hash_ids": %s}`, limits.MaxTokens, limits.MaxTokens, ids(limits.MaxHashIDs)))
	reqs, _, err := ReadFile(p, Options{})
	if err != nil || len(reqs) != 1 || len(reqs[0].HashIDs) != limits.MaxHashIDs || reqs[0].InputLength != limits.MaxTokens {
		t.Fatalf("a row at the limits: %v", err)
	}
}

// TestHostileFirstLine: the format detection parses the first line too; a first line of too
// many values is refused before it is parsed.
func TestHostileFirstLine(t *testing.T) {
	t.Parallel()
	p := writeTrace(t, `{"timestamp": 1, "input_length": 1, "x": `+ids(maxLineValues+1)+`}`)
	if _, _, err := ReadFile(p, Options{}); err == nil || !strings.Contains(err.Error(), "JSON values") {
		t.Fatalf("error %v", err)
	}
}

// TestCountValuesSkipsStrings: commas and brackets inside strings (escaped quotes included)
// are not values.
func TestCountValuesSkipsStrings(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]int{
		`{"a": "x,y,[z]{", "b": [1, 2]}`: 5,
		`{"a": "q\",\\", "b": 1}`:        3,
		`1`:                              1,
	} {
		if got := countValues([]byte(line), 100); got != want {
			t.Errorf("countValues(%s) = %d, want %d", line, got, want)
		}
	}
}

// TestTraceMemoryBudget: a trace read whole stops at the line where its requests pass the
// memory budget (limits.MaxTraceMemory, here a small Options.MaxMemory), naming it.
func TestTraceMemoryBudget(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf(`{"timestamp": %d, "input_length": 600, "hash_ids": [1, 2]}`, i))
	}
	p := writeTrace(t, lines...)
	budget := 10*requestSize + 1
	_, _, err := ReadFile(p, Options{MaxMemory: budget})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 10 || !strings.Contains(err.Error(), "limits.MaxTraceMemory") {
		t.Fatalf("ReadFile: %v, want line 10 naming limits.MaxTraceMemory", err)
	}
	if _, _, err := ReadSorted(p, Options{MaxMemory: budget}, 0); err == nil {
		t.Fatal("ReadSorted read past the budget")
	}
	if reqs, _, err := ReadFile(p, Options{}); err != nil || len(reqs) != 100 {
		t.Fatalf("default budget: %d requests, %v", len(reqs), err)
	}
}

// TestCollectorLimits: trace stats refuses the row past its row limit and the hash ids past
// its distinct-id limit instead of growing without bound.
func TestCollectorLimits(t *testing.T) {
	t.Parallel()
	c := NewCollector()
	c.maxRows, c.maxIDs = 3, 4
	for i := range 3 {
		if err := c.Add(Request{HashIDs: []int64{1}}); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := c.Add(Request{}); err == nil || !strings.Contains(err.Error(), "limits.MaxTraceRows") {
		t.Fatalf("row 4: %v", err)
	}
	c = NewCollector()
	c.maxIDs = 4
	if err := c.Add(Request{HashIDs: []int64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(Request{HashIDs: []int64{4, 5}}); err == nil || !strings.Contains(err.Error(), "limits.MaxDistinctHashIDs") {
		t.Fatalf("ids 4, 5: %v", err)
	}
}

// TestPayloadOutputLimitClamped: a recorded body's max_tokens above limits.MaxTokens (clients
// send 2^31−1) is the client's limit, read as the limit; an output_tokens count that large is
// refused.
func TestPayloadOutputLimitClamped(t *testing.T) {
	t.Parallel()
	p := writeTrace(t, `{"timestamp_ms": 0, "payload": {"model": "m", "max_tokens": 2147483647}}`)
	reqs, _, err := ReadFile(p, Options{})
	if err != nil || reqs[0].OutputLength != limits.MaxTokens {
		t.Fatalf("%v %v", reqs, err)
	}
	p = writeTrace(t, `{"timestamp_ms": 0, "output_tokens": 2147483647, "payload": {"model": "m"}}`)
	if _, _, err := ReadFile(p, Options{}); err == nil || !strings.Contains(err.Error(), "limits.MaxTokens") {
		t.Fatalf("output_tokens: %v", err)
	}
}
