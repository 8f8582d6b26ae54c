package bench

import (
	"container/heap"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/llmtap/llmtap/load/gen"
)

// UserCentric is AIPerf's user-centric rate schedule (--user-centric-rate Q --num-users U), for
// KV-cache benchmarks: U users each send a turn every Gap = U/Q seconds, so the server sees Q
// requests a second; a user's next turn goes at max(its response's end, its last send + Gap)
// (Conversations.Gap). The run starts in a steady state, as AIPerf's does: the users are
// spread over the life of a session (turns − 1 gaps, turns the conversations' mean), each with
// only the turns its virtual age leaves, plus one new user with all of its turns; they start
// 1/Q apart in an order that mixes ages, and each user is replaced by a new one at its start
// time + its turns × Gap, on an absolute schedule that responses do not move.
//
// As a gen.Arrivals it yields the start times of the users (session n is the n-th user to
// start); Turns(n) is how many turns user n sends.
type UserCentric struct {
	gap, stagger time.Duration
	turnsOf      func(n int) int // the turns of user n's conversation

	initial []ucUser // the first users, in start order
	spawns  spawnHeap
	n       int

	mu    sync.Mutex
	turns map[int]int
}

type ucUser struct {
	at    time.Duration
	turns int // 0: all of its conversation's
	order int
}

// NewUserCentric returns the schedule of users at rate req/s, whose sessions average
// meanTurns turns; turnsOf(n) is the length of the conversation user n sends.
func NewUserCentric(rate float64, users int, meanTurns float64, turnsOf func(n int) int) *UserCentric {
	u := &UserCentric{
		gap:     time.Duration(float64(users) / rate * float64(time.Second)),
		stagger: time.Duration(1 / rate * float64(time.Second)),
		turnsOf: turnsOf, turns: map[int]int{},
	}
	sessionTurns := int(math.RoundToEven(meanTurns))
	lifetime := max(1, sessionTurns-1)
	step, alternate := 1, gcd(users, lifetime) > 1
	if alternate {
		for k := 2; k < users; k++ {
			if gcd(users, k) == 1 {
				step = k
				break
			}
		}
	}
	for i := range users {
		age := (users - i) * lifetime
		left := lifetime - age/users
		if left <= 0 {
			continue // virtually done before the start
		}
		slot := age % users
		if alternate {
			slot = (i * step) % users
		}
		u.initial = append(u.initial, ucUser{turns: left, order: users - slot})
	}
	u.initial = append(u.initial, ucUser{order: 0}) // a new user replaces the one just done
	sort.SliceStable(u.initial, func(a, b int) bool { return u.initial[a].order < u.initial[b].order })
	for i := range u.initial {
		u.initial[i].at = time.Duration(u.initial[i].order) * u.stagger
	}
	return u
}

// Gap is the time between a user's turns.
func (u *UserCentric) Gap() time.Duration { return u.gap }

// Next implements gen.Arrivals: the start time of the next user.
func (u *UserCentric) Next() time.Duration {
	n := u.n
	u.n++
	var usr ucUser
	if n < len(u.initial) {
		usr = u.initial[n]
	} else {
		usr = ucUser{at: heap.Pop(&u.spawns).(time.Duration)}
	}
	turns := u.turnsOf(n)
	if usr.turns > 0 {
		turns = min(turns, usr.turns)
	}
	u.mu.Lock()
	u.turns[n] = turns
	u.mu.Unlock()
	heap.Push(&u.spawns, usr.at+time.Duration(turns)*u.gap)
	return usr.at
}

// Turns returns how many turns user n sends (known once its start time was drawn).
func (u *UserCentric) Turns(n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.turns[n]; ok {
		return t
	}
	return u.turnsOf(n)
}

// Forget drops what is kept of user n once its session ended.
func (u *UserCentric) Forget(n int) {
	u.mu.Lock()
	delete(u.turns, n)
	u.mu.Unlock()
}

var _ gen.Arrivals = (*UserCentric)(nil)

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// spawnHeap is a min-heap of start times.
type spawnHeap []time.Duration

func (h spawnHeap) Len() int           { return len(h) }
func (h spawnHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h spawnHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *spawnHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *spawnHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
