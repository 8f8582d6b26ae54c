package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// collect is a sink that remembers the request ids it saw, in order.
type collect struct {
	mu  sync.Mutex
	ids []string
}

func (c *collect) Consume(r *record.Record) {
	c.mu.Lock()
	c.ids = append(c.ids, r.RequestID)
	c.mu.Unlock()
}

func (c *collect) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

func TestEveryRecordReachesTheSinksWithAndWithoutLinger(t *testing.T) {
	for _, linger := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond} {
		var finalized atomic.Int64
		c := &collect{}
		p := New(64, func(Routed) { finalized.Add(1) }, c)
		p.SetLinger(linger)
		const n = 1000
		sent := 0
		for i := range n {
			if p.Submit(Routed{Record: &record.Record{RequestID: string(rune('a'+i%26)) + string(rune('0'+i/26%10))}}) {
				sent++
			}
			if i%50 == 0 {
				time.Sleep(100 * time.Microsecond) // bursts, with the worker lingering between
			}
		}
		p.Flush()
		got := c.seen()
		if len(got) != sent || int(finalized.Load()) != sent || uint64(sent)+p.Dropped() != n {
			t.Fatalf("linger %v: %d submitted (%d dropped), %d finalized, %d reached the sink", linger, sent, p.Dropped(), finalized.Load(), len(got))
		}
		if p.Processed() != uint64(sent) {
			t.Fatalf("linger %v: Processed %d, want %d", linger, p.Processed(), sent)
		}
		start := time.Now()
		_ = p.Close(context.Background())
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("linger %v: Close took %v", linger, d)
		}
		if p.Submit(Routed{Record: &record.Record{}}) {
			t.Fatalf("linger %v: a closed pipeline accepted a record", linger)
		}
	}
}

// TestCloseDrainsWhileLingering: records queued while the worker lingers are handled by Close,
// not lost.
func TestCloseDrainsWhileLingering(t *testing.T) {
	c := &collect{}
	p := New(64, nil, c)
	p.SetLinger(time.Hour)
	p.Submit(Routed{Record: &record.Record{RequestID: "first"}})
	for len(c.seen()) == 0 {
		time.Sleep(time.Millisecond)
	}
	// The worker now lingers for an hour; these wait in the queue.
	p.Submit(Routed{Record: &record.Record{RequestID: "second"}})
	p.Submit(Routed{Record: &record.Record{RequestID: "third"}})
	done := make(chan struct{})
	go func() { _ = p.Close(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the linger")
	}
	if got := c.seen(); len(got) != 3 || got[2] != "third" {
		t.Fatalf("sink saw %v, want first, second, third", got)
	}
}

// closing is a sink that drains: it records what it saw when it was closed, and how often.
type closing struct {
	collect
	atClose []string
	closes  int
	err     error
}

func (c *closing) Close(context.Context) error {
	c.atClose = c.seen()
	c.closes++
	return c.err
}

// TestCloseCascadesToTheSinks: Close closes the sinks that drain once every record reached
// them, once, joining their errors, and so what AddCloser added (what a routed sink writes
// to); a sink that does not drain is left alone; a context that ends before the queue drained
// returns its error and closes nothing.
func TestCloseCascadesToTheSinks(t *testing.T) {
	t.Parallel()
	a, b, routed := &closing{}, &closing{err: errors.New("flush failed")}, &closing{}
	p := New(64, nil, a, &collect{})
	p.AddSink(b)
	p.AddRouted(func(x Routed) { routed.Consume(x.Record) })
	p.AddCloser(routed.Close)
	for _, id := range []string{"1", "2", "3"} {
		p.Submit(Routed{Record: &record.Record{RequestID: id}})
	}
	if err := p.Close(context.Background()); !errors.Is(err, b.err) {
		t.Errorf("Close returned %v, want the failing sink's error", err)
	}
	_ = p.Close(context.Background())
	for _, s := range []*closing{a, b, routed} {
		if s.closes != 1 || len(s.atClose) != 3 {
			t.Errorf("sink closed %d times, having seen %v; want once, after all three records", s.closes, s.atClose)
		}
	}

	stuck := make(chan struct{})
	late := &closing{}
	q := New(4, func(Routed) { <-stuck }, late)
	q.Submit(Routed{Record: &record.Record{}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := q.Close(ctx); !errors.Is(err, context.DeadlineExceeded) || late.closes != 0 {
		t.Errorf("Close with a worker still busy: %v, sink closed %d times; want the deadline, none", err, late.closes)
	}
	close(stuck)
}
