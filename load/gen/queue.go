package gen

import "sync"

// slotQueue bounds the requests in flight and queues the ones scheduled while every slot is
// taken, in schedule order. A queued request costs only its Stamp, not a goroutine: a sender
// that finishes takes the oldest queued request and sends it with the slot it already holds,
// so a slot is never freed while a request is waiting for one.
type slotQueue struct {
	mu      sync.Mutex
	free    int
	pending []Stamp // FIFO, oldest first
	max     int     // most requests pending at once
}

func newSlotQueue(slots, maxPending int) *slotQueue {
	return &slotQueue{free: slots, max: maxPending}
}

// admission is what became of a scheduled request.
type admission int

const (
	admitted admission = iota // a slot was free: the caller now holds it and sends at once
	queued                    // queued; a finishing sender will send it
	refused                   // the queue is full: drop and count it
)

func (q *slotQueue) admit(st Stamp) admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.free > 0:
		q.free--
		return admitted
	case len(q.pending) < q.max:
		q.pending = append(q.pending, st)
		return queued
	default:
		return refused
	}
}

// next is called by a sender holding a slot once its request is done. It hands over the oldest
// queued request (ok true: the caller keeps the slot and sends it), or frees the slot.
func (q *slotQueue) next() (st Stamp, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.free++
		return Stamp{}, false
	}
	st = q.pending[0]
	q.pending = q.pending[1:] // append reallocates from the live part, so memory stays bounded
	return st, true
}
