package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat message of a request body: its content is Content, or, when Parts is
// set (a dataset turn with several texts), an array of text parts, as AIPerf sends them.
type Message struct {
	Role    string
	Content string
	Parts   []string
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MarshalJSON writes {"role", "content"}.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Parts == nil {
		return json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{m.Role, m.Content})
	}
	parts := make([]textPart, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = textPart{"text", p}
	}
	return json.Marshal(struct {
		Role    string     `json:"role"`
		Content []textPart `json:"content"`
	}{m.Role, parts})
}

// text is the message's content as one string (parts joined by newlines).
func (m Message) text() string {
	if m.Parts != nil {
		return strings.Join(m.Parts, "\n")
	}
	return m.Content
}

// joinContents is the single prompt of the completions API for msgs: their contents, joined
// by newlines.
func joinContents(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.text()
	}
	return strings.Join(parts, "\n")
}

// flatParts returns msgs with every text-parts message joined into one string, for the
// Ollama API, whose content is always a string.
func flatParts(msgs []Message) []Message {
	out := slices.Clone(msgs)
	for i, m := range out {
		if m.Parts != nil {
			out[i] = Message{Role: m.Role, Content: m.text()}
		}
	}
	return out
}

// splitSystem takes the system messages out of msgs, for the Anthropic API, which wants them
// in a member of their own: their contents joined by newlines, and the other messages.
func splitSystem(msgs []Message) (string, []Message) {
	var sys []string
	rest := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == RoleSystem {
			sys = append(sys, m.text())
			continue
		}
		rest = append(rest, m)
	}
	return strings.Join(sys, "\n"), rest
}

// Turn is one request of a conversation: the user's text, its output length (0: none sent),
// the delay after the previous turn's response before it is sent (AIPerf's turn delay), and a
// dataset row's own body members.
type Turn struct {
	Role string
	Text string
	// Texts, when set, are the turn's several texts, sent as text parts (Text is then unused).
	Texts     []string
	MaxTokens int
	Delay     time.Duration
	Extra     []Extra
}

// Conversation is what a session sends: its turns in order, and the messages that lead every
// request of it (AIPerf's shared system prompt and per-session user context).
type Conversation struct {
	// System is sent first in every request as a system message; "" sends none.
	System string
	// Context is sent after System in every request as a user message; "" sends none.
	Context string
	Turns   []Turn
}

// Messages returns the messages of turn k of c, as AIPerf sends a multi-turn conversation:
// System and Context, then every earlier turn followed by the assistant's reply to it (the
// text the server answered, replies[i] for turn i; a turn without a reply text is followed by
// none), then turn k itself.
func (c *Conversation) Messages(k int, replies []string) []Message {
	msgs := make([]Message, 0, 2+2*k+1)
	if c.System != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: c.System})
	}
	if c.Context != "" {
		msgs = append(msgs, Message{Role: RoleUser, Content: c.Context})
	}
	for i := 0; i <= k && i < len(c.Turns); i++ {
		t := c.Turns[i]
		role := t.Role
		if role == "" {
			role = RoleUser
		}
		msgs = append(msgs, Message{Role: role, Content: t.Text, Parts: t.Texts})
		if i < k && i < len(replies) && replies[i] != "" {
			msgs = append(msgs, Message{Role: RoleAssistant, Content: replies[i]})
		}
	}
	return msgs
}

// TurnBody returns the request body of turn k of c with the replies so far (Messages).
func (s BodySpec) TurnBody(c *Conversation, k int, replies []string) ([]byte, error) {
	t := c.Turns[k]
	return s.BuildMessages(c.Messages(k, replies), t.MaxTokens, t.Extra)
}

// MaxTurns bounds the turns of one conversation, synthetic or read from a file.
const MaxTurns = 1000

// ConversationSpec makes synthetic conversations the way AIPerf's synthetic dataset does:
// --conversation-turn-mean/-stddev turns, each turn after the first delayed by
// --conversation-turn-delay-mean/-stddev milliseconds times --conversation-turn-delay-ratio,
// each turn's prompt and output length drawn like a single-turn request's; a prefix from the
// pool (--num-prefix-prompts of --prefix-prompt-length tokens) before the first turn's
// prompt; a system prompt shared by every conversation (--shared-system-prompt-length) and a
// user context of its own for each (--user-context-prompt-length).
type ConversationSpec struct {
	Corpus  *Corpus
	Lengths Lengths
	Seed    uint64
	// TurnMean and TurnStddev are the turns per conversation (normal, at least 1).
	TurnMean, TurnStddev float64
	// DelayMean and DelayStddev are the delay between turns in milliseconds (normal, ≥ 0),
	// multiplied by DelayRatio.
	DelayMean, DelayStddev, DelayRatio float64
	// PrefixPool is the number of prefix prompts and PrefixLength their length in tokens.
	PrefixPool, PrefixLength int
	// SystemLength is the shared system prompt's length in tokens; 0: none.
	SystemLength int
	// ContextLength is each conversation's user context length in tokens; 0: none.
	ContextLength int

	prefixes []string
	system   string
}

// Validate reports every out-of-range field at once.
func (s *ConversationSpec) Validate() error {
	var errs []error
	finite := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: want a finite number ≥ 0", name, v))
		}
	}
	finite("--conversation-turn-mean", s.TurnMean)
	finite("--conversation-turn-stddev", s.TurnStddev)
	finite("--conversation-turn-delay-mean", s.DelayMean)
	finite("--conversation-turn-delay-stddev", s.DelayStddev)
	finite("--conversation-turn-delay-ratio", s.DelayRatio)
	if s.TurnMean < 1 || s.TurnMean > MaxTurns {
		errs = append(errs, fmt.Errorf("--conversation-turn-mean %v: want 1 to %d", s.TurnMean, MaxTurns))
	}
	if s.DelayMean*s.DelayRatio > 3_600_000 {
		errs = append(errs, fmt.Errorf("--conversation-turn-delay-mean × ratio %v ms: want at most an hour", s.DelayMean*s.DelayRatio))
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"--num-prefix-prompts", s.PrefixPool}, {"--prefix-prompt-length", s.PrefixLength},
		{"--shared-system-prompt-length", s.SystemLength}, {"--user-context-prompt-length", s.ContextLength}} {
		if l.v < 0 || l.v > maxPromptTokens {
			errs = append(errs, fmt.Errorf("%s %d: want 0 to %d", l.name, l.v, maxPromptTokens))
		}
	}
	if s.PrefixPool > maxPrefixPool {
		errs = append(errs, fmt.Errorf("--num-prefix-prompts %d: want at most %d", s.PrefixPool, maxPrefixPool))
	}
	if (s.PrefixPool > 0 || s.PrefixLength > 0) && (s.SystemLength > 0 || s.ContextLength > 0) {
		errs = append(errs, errors.New("--prefix-prompt-length/--num-prefix-prompts and --shared-system-prompt-length/--user-context-prompt-length are mutually exclusive (as in AIPerf)"))
	}
	return errors.Join(errs...)
}

// maxPromptTokens bounds a prefix, system or context prompt; maxPrefixPool the prefix pool.
const (
	maxPromptTokens = 1 << 20
	maxPrefixPool   = 10000
)

// prepare builds the prefix pool and the shared system prompt once.
func (s *ConversationSpec) prepare() {
	if s.prefixes != nil || s.system != "" {
		return
	}
	if s.PrefixLength > 0 {
		n := max(s.PrefixPool, 1) // AIPerf: a prefix length alone makes a pool of one
		rng := rand.New(rand.NewPCG(s.Seed^0x9e3779b9, 1))
		for range n {
			s.prefixes = append(s.prefixes, string(s.Corpus.Random(nil, s.PrefixLength, rng)))
		}
	}
	if s.SystemLength > 0 {
		rng := rand.New(rand.NewPCG(s.Seed^0x5157e3, 2))
		s.system = string(s.Corpus.Random(nil, s.SystemLength, rng))
	}
}

// Conversation builds conversation i. It depends only on the seed and i; the first call
// builds the shared prompts, so the first call must not race with others.
func (s *ConversationSpec) Conversation(i int) Conversation {
	s.prepare()
	rng := rand.New(rand.NewPCG(s.Seed, uint64(i)))
	turns := min(max(positiveNormalInt(s.TurnMean, s.TurnStddev, rng), 1), MaxTurns)
	c := Conversation{System: s.system, Turns: make([]Turn, turns)}
	if s.ContextLength > 0 {
		crng := rand.New(rand.NewPCG(s.Seed^0xc0fe, uint64(i)))
		c.Context = string(s.Corpus.Random(nil, s.ContextLength, crng))
	}
	for k := range c.Turns {
		isl, osl := s.Lengths.Sample(rng)
		text := s.Corpus.Random(make([]byte, 0, isl*5), isl, rng)
		if k == 0 && len(s.prefixes) > 0 {
			// AIPerf: f"{prefix} {content}" on the first turn.
			text = append([]byte(s.prefixes[rng.IntN(len(s.prefixes))]+" "), text...)
		}
		t := Turn{Text: string(text), MaxTokens: osl}
		if k > 0 {
			ms := float64(positiveNormalInt(s.DelayMean, s.DelayStddev, rng)) * s.DelayRatio
			t.Delay = time.Duration(ms * float64(time.Millisecond))
		}
		c.Turns[k] = t
	}
	return c
}

// positiveNormalInt draws as AIPerf's sample_positive_normal_integer: a normal sample
// redrawn until it is ≥ 0, rounded up (so a mean of 0 with no spread gives 0).
func positiveNormalInt(mean, stddev float64, rng *rand.Rand) int {
	v := mean
	if stddev > 0 {
		for range 100 {
			if v = mean + stddev*rng.NormFloat64(); v >= 0 {
				break
			}
		}
		v = max(v, 0)
	}
	return int(math.Min(math.Ceil(v), math.MaxInt32))
}
