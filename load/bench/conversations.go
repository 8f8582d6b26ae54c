package bench

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/tokens"
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

// ConversationLoad is a workload of conversations, as AIPerf's multi-turn, dataset and
// user-centric runs send them: a dataset's conversations, or synthetic ones, drawn by the
// dataset's sampling strategy and sent as sessions (Conversations) by the spec's schedule or
// by AIPerf's user-centric rate.
type ConversationLoad struct {
	// Path is the URL path and Body how bodies are written.
	Path string
	Body workload.BodySpec
	// Dataset holds the conversations; nil: Entries synthetic ones made by Synthetic (its
	// Corpus, when nil, sized in Tokens' tokens).
	Dataset   *workload.Dataset
	Synthetic *workload.ConversationSpec
	Entries   int
	Tokens    tokens.Counter
	// Sampling is how sessions draw the conversations (workload.SamplingStrategies); empty: the
	// dataset kind's preferred strategy. Seed seeds the draw.
	Sampling string
	Seed     uint64
	// ScaleDelays multiplies the turn delays a dataset recorded by DelayRatio (synthetic
	// conversations take their ratio from Synthetic).
	ScaleDelays bool
	DelayRatio  float64
	// Count, when positive, is the total number of requests (turns); 0: every turn of the
	// sessions the schedule starts.
	Count int
	// Sessions, when positive, is the most sessions started (AIPerf's --conversation-num).
	Sessions int
	// UserRate and Users, when set, pace the sessions as AIPerf's user-centric rate does
	// (UserCentric) instead of the spec's schedule; the conversations then need two turns or
	// more on average.
	UserRate float64
	Users    int
	// OpenLoop is set when the spec's schedule is a rate: a closed loop's slot is held for a
	// whole session, an open loop's is not.
	OpenLoop bool
}

// Apply makes spec send the conversations: its Build, Reply and Next, its schedule's request
// bound (and its arrivals for a user-centric run), Total, HoldSessions and MaxBody.
func (l ConversationLoad) Apply(spec *Spec) error {
	data := l.Dataset
	if data == nil {
		conv := *l.Synthetic
		if conv.Corpus == nil {
			corpus, err := workload.CorpusFor(l.Tokens)
			if err != nil {
				return err
			}
			conv.Corpus = corpus
		}
		convs := make([]workload.Conversation, l.Entries)
		for i := range convs {
			convs[i] = conv.Conversation(i)
		}
		data = &workload.Dataset{Conversations: convs}
	}
	data.Sampling = l.Sampling
	if _, err := data.Sampler(l.Seed); err != nil {
		return err
	}
	if l.ScaleDelays && data.Kind != "" {
		for i := range data.Conversations {
			for k := range data.Conversations[i].Turns {
				t := &data.Conversations[i].Turns[k]
				t.Delay = time.Duration(t.Delay.Seconds() * l.DelayRatio * float64(time.Second))
			}
		}
	}
	c := &Conversations{Path: l.Path, Body: l.Body, Count: l.Count, Label: "conv",
		Conversation: func(s int) *workload.Conversation { return data.Conversation(s, l.Seed) }}
	maxBody := 0
	for i := range data.Conversations {
		cv := &data.Conversations[i]
		b, err := l.Body.TurnBody(cv, len(cv.Turns)-1, nil)
		if err != nil {
			return err
		}
		maxBody = max(maxBody, len(b))
	}
	spec.MaxBody = maxBody
	userCentric := l.UserRate != 0 || l.Users != 0
	if userCentric {
		mean := 0.0
		for _, cv := range data.Conversations {
			mean += float64(len(cv.Turns))
		}
		mean /= float64(len(data.Conversations))
		if mean < 2 {
			return fmt.Errorf("--user-centric-rate needs multi-turn conversations (a mean of %.2g turns: set --conversation-turn-mean ≥ 2)", mean)
		}
		turnsOf := func(s int) int { return len(c.Conversation(s).Turns) }
		uc := NewUserCentric(l.UserRate, l.Users, mean, turnsOf)
		if l.Count > 0 {
			// The same schedule drawn ahead tells how many turns each user sends, so how many
			// users the request count takes.
			twin := NewUserCentric(l.UserRate, l.Users, mean, turnsOf)
			var turns []int
			for total := 0; total < l.Count; total += turns[len(turns)-1] {
				twin.Next()
				turns = append(turns, twin.Turns(len(turns)))
			}
			c.Turns = func(s int) int { return turns[min(s, len(turns)-1)] }
			spec.Schedule.MaxRequests = c.Sessions()
		}
		c.Turns = func(s int) int { t := uc.Turns(s); uc.Forget(s); return t }
		c.Gap = uc.Gap()
		spec.Schedule.Arrivals, spec.Schedule.Concurrency = uc, 0
	} else {
		spec.Schedule.MaxRequests = c.Sessions()
	}
	if n := l.Sessions; n > 0 {
		// AIPerf's session count stop condition: no session starts past it (with a request
		// count or a duration, whichever comes first).
		if spec.Schedule.MaxRequests == 0 || spec.Schedule.MaxRequests > n {
			spec.Schedule.MaxRequests = n
		}
	}
	spec.Total = l.Count
	if l.Count == 0 && l.Sessions > 0 && !userCentric {
		spec.Total = 0
		for s := range spec.Schedule.MaxRequests {
			spec.Total += len(c.Conversation(s).Turns)
		}
	}
	spec.HoldSessions = !l.OpenLoop && !userCentric
	c.Apply(spec)
	return nil
}
