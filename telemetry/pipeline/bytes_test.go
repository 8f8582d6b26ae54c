package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestQueueBoundedInBytes holds the worker on its first record and offers records with 1 KiB
// request bodies: the queue takes them while their bytes fit the bound, then drops and counts
// them (queue_bytes) although it has room for more records; once released, every record taken
// reaches the sinks and sent = processed + dropped.
func TestQueueBoundedInBytes(t *testing.T) {
	t.Parallel()
	const (
		sent = 50
		body = 1 << 10
	)
	hold, held := make(chan struct{}), make(chan struct{})
	first := true
	c := &collect{}
	p := New(1000, func(Routed) {
		if first {
			first = false
			close(held)
			<-hold
		}
	}, c)
	p.SetMaxBytes(8*body + body/2)
	if !p.Submit(Routed{Record: &record.Record{RequestID: "first", RequestBody: make([]byte, body)}}) {
		t.Fatal("the first record was dropped")
	}
	<-held // the worker holds it: no longer queued
	for i := range sent - 1 {
		p.Submit(Routed{Record: &record.Record{RequestID: fmt.Sprint(i), RequestBody: make([]byte, body)}})
		if q := p.QueuedBytes(); q > 8*body+body/2 {
			t.Fatalf("after record %d the queue holds %d bytes, over its bound", i, q)
		}
	}
	// The held record still counts until its sinks ran, so 7 more fit beside it.
	if got, want := p.DroppedBytes(), uint64(sent-1-7); got != want || p.Dropped() != want {
		t.Errorf("dropped %d for bytes (%d in all), want %d", got, p.Dropped(), want)
	}
	close(hold)
	_ = p.Close(context.Background())
	if got := uint64(len(c.seen())) + p.Dropped(); got != sent {
		t.Errorf("processed %d + dropped %d != %d sent", len(c.seen()), p.Dropped(), sent)
	}
	if q := p.QueuedBytes(); q != 0 {
		t.Errorf("%d bytes still counted after Close", q)
	}
}

// TestBytesCountsWhatARecordCarries: what the byte bound counts of a record.
func TestBytesCountsWhatARecordCarries(t *testing.T) {
	t.Parallel()
	r := &record.Record{RequestBody: make([]byte, 100), OutputText: make([]byte, 30), ReasoningText: make([]byte, 7), InterChunkMs: make([]float64, 4)}
	if got := Bytes(r); got != 100+30+7+32 {
		t.Errorf("Bytes = %d, want %d", got, 100+30+7+32)
	}
}
