package loadtest

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmtap/llmtap/shadow/workload"
)

// Conversations sends multi-turn conversations through a Spec, as AIPerf does: the load
// generator's request n (its schedule: concurrency, rate, user spawns) starts session n, which
// sends its conversation's turns in order, each after the previous turn's response ended and
// the turn's delay passed, each request carrying every earlier turn and the text the server
// answered to it, and all of them one X-Correlation-Id.
//
// Request numbers: session n's first turn is n; its turn k ≥ 1 is followBase + n·MaxTurns +
// k − 1, so that a follow-up never takes a number the schedule hands out.
type Conversations struct {
	// Path is the URL path and Body how bodies are written.
	Path string
	Body workload.BodySpec
	// Conversation returns what session s sends. Required.
	Conversation func(s int) *workload.Conversation
	// Turns, when set, is how many of its conversation's turns session s sends (fewer for the
	// users of a user-centric run that started before the run did); nil: all.
	Turns func(s int) int
	// Count, when positive, is the total number of requests: sessions stop sending once the
	// ones before them and their own earlier turns reach it (see Sessions).
	Count int
	// Gap, when positive, spaces the turns of a session: turn k+1 is sent no sooner than Gap
	// after turn k was (AIPerf's user-centric turn gap), or at once when that time has passed.
	Gap time.Duration
	// Label prefixes the sessions' correlation ids.
	Label string

	mu     sync.Mutex
	states map[int]*convState
	cum    []int // cum[s]: requests of the sessions before s (Count > 0)
}

// followBase is the first request number of follow-up turns: the schedule's numbers stay
// below it.
const followBase = 1 << 40

type convState struct {
	conv    *workload.Conversation
	turns   int
	replies []string
	sent    time.Time // when the last turn was built (Gap)
}

// turnsOf is how many turns session s sends.
func (c *Conversations) turnsOf(s int) int {
	n := len(c.Conversation(s).Turns)
	if c.Turns != nil {
		n = min(n, c.Turns(s))
	}
	return max(n, 1)
}

// Sessions returns how many sessions the schedule must start so that Count requests are
// sent (0 when Count is 0: no bound), computing the requests before each.
func (c *Conversations) Sessions() int {
	if c.Count <= 0 {
		return 0
	}
	c.cum = c.cum[:0]
	total := 0
	for s := 0; total < c.Count; s++ {
		c.cum = append(c.cum, total)
		total += c.turnsOf(s)
	}
	return len(c.cum)
}

// split turns a request number into its session and turn.
func split(n int) (s, k int) {
	if n < followBase {
		return n, 0
	}
	m := n - followBase
	return m / workload.MaxTurns, m%workload.MaxTurns + 1
}

// Apply sets spec's Build, Next and Reply to send the conversations.
func (c *Conversations) Apply(spec *Spec) {
	if c.Count > 0 && c.cum == nil {
		c.Sessions()
	}
	c.states = map[int]*convState{}
	spec.Build, spec.Next, spec.Reply = c.build, c.next, c.reply
}

func (c *Conversations) build(n int) (Request, error) {
	s, k := split(n)
	c.mu.Lock()
	st := c.states[s]
	if k == 0 {
		st = &convState{conv: c.Conversation(s), turns: c.turnsOf(s)}
		c.states[s] = st
	}
	if st == nil || k >= len(st.conv.Turns) {
		c.mu.Unlock()
		return Request{}, fmt.Errorf("conversations: request %d: no turn %d of session %d", n, k, s)
	}
	st.sent = time.Now()
	replies := st.replies
	c.mu.Unlock()
	body, err := c.Body.TurnBody(st.conv, k, replies)
	return Request{Path: c.Path, Body: body, Session: c.Label + "-" + strconv.Itoa(s), Turn: k + 1, SessionNum: &s}, err
}

func (c *Conversations) reply(n int, text string) {
	s, k := split(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.states[s]; st != nil && len(st.replies) == k {
		st.replies = append(st.replies, text)
	}
}

func (c *Conversations) next(n int) (int, time.Duration, bool) {
	s, k := split(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.states[s]
	if st == nil {
		return 0, 0, false
	}
	if len(st.replies) == k {
		st.replies = append(st.replies, "") // no reply text came (an error): none is appended
	}
	last := k+1 >= st.turns
	if c.Count > 0 && s < len(c.cum) && c.cum[s]+k+1 >= c.Count {
		last = true
	}
	if last {
		delete(c.states, s)
		return 0, 0, false
	}
	delay := st.conv.Turns[k+1].Delay
	if c.Gap > 0 {
		delay = max(time.Until(st.sent.Add(c.Gap)), 0)
	}
	return followBase + s*workload.MaxTurns + k, delay, true
}
