package record

import "sync"

// Ring keeps the most recent records, bounded. It is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []*Record
	next int
	full bool
}

// NewRing returns a ring holding up to size records (default 1000 when size <= 0).
func NewRing(size int) *Ring {
	if size <= 0 {
		size = 1000
	}
	return &Ring{buf: make([]*Record, size)}
}

// Consume adds r, evicting the oldest record when the ring is full. The ring keeps r: callers
// must not modify it afterwards.
func (g *Ring) Consume(r *Record) {
	g.mu.Lock()
	g.buf[g.next] = r
	g.next++
	if g.next == len(g.buf) {
		g.next, g.full = 0, true
	}
	g.mu.Unlock()
}

// Last returns up to n of the most recent records, oldest first (newest last). n <= 0 means all.
func (g *Ring) Last(n int) []*Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	size := g.next
	if g.full {
		size = len(g.buf)
	}
	if n <= 0 || n > size {
		n = size
	}
	out := make([]*Record, 0, n)
	for i := n; i > 0; i-- {
		idx := (g.next - i + len(g.buf)) % len(g.buf)
		out = append(out, g.buf[idx])
	}
	return out
}
