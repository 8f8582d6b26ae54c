package bench

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestCollectorKeepsItsOwnCopy: the tap's pipeline clears a record's request body once every
// sink had it, on the pipeline's goroutine, while the collector joins the record with the
// generator's outcome later, on another goroutine. The collector must keep what it needs at
// Consume: under -race, reading the shared record in done (a no-content record is copied to
// be marked invalid) is a data race with the pipeline's write, and the request is still
// exported as AIPerf's no-content error.
func TestCollectorKeepsItsOwnCopy(t *testing.T) {
	var out bytes.Buffer
	col := newCollector("x-", "profiling", &out, nil)
	r := &record.Record{RequestID: "x-0", Status: 200, UsageOutputTokens: -1, RequestBody: []byte(`{"model":"m"}`)}
	consumed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		col.Consume(r)
		close(consumed)
		r.RequestBody = nil // what the pipeline does after the sinks (pipeline.handle)
	})
	<-consumed
	col.done(gen.Outcome{Stamp: gen.Stamp{N: 0}, Status: 200})
	wg.Wait()
	col.flush()
	line := out.String()
	if !strings.Contains(line, "no generated content") {
		t.Errorf("the export line does not mark the no-content request invalid: %s", line)
	}
}
