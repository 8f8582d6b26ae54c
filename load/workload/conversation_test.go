package workload

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSyntheticConversations checks AIPerf's synthetic conversation rules: the turn count,
// delays (ms × ratio) on every turn but the first, the prefix before the first prompt only,
// and conversations that depend only on the seed and their number.
func TestSyntheticConversations(t *testing.T) {
	corpus, err := DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	spec := &ConversationSpec{Corpus: corpus, Lengths: Pair{ISL: Normal{Mean: 12}, OSL: Normal{Mean: 3}}, Seed: 7,
		TurnMean: 4, DelayMean: 100, DelayRatio: 0.5, PrefixPool: 1, PrefixLength: 20}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	c := spec.Conversation(3)
	if len(c.Turns) != 4 {
		t.Fatalf("%d turns, want 4", len(c.Turns))
	}
	for k, turn := range c.Turns {
		want := 50 * time.Millisecond
		if k == 0 {
			want = 0
		}
		if turn.Delay != want || turn.MaxTokens != 3 {
			t.Errorf("turn %d: delay %v, output %d; want %v and 3", k, turn.Delay, turn.MaxTokens, want)
		}
	}
	prefix := spec.prefixes[0]
	if !strings.HasPrefix(c.Turns[0].Text, prefix+" ") || strings.HasPrefix(c.Turns[1].Text, prefix) {
		t.Errorf("the prefix %q must start the first turn only: %q, %q", prefix, c.Turns[0].Text, c.Turns[1].Text)
	}
	again := spec.Conversation(3)
	if !reflect.DeepEqual(c, again) || reflect.DeepEqual(c, spec.Conversation(4)) {
		t.Error("a conversation must depend on its number and the seed only")
	}
	bad := &ConversationSpec{TurnMean: 2, DelayRatio: 1, PrefixLength: 5, SystemLength: 5}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "mutually exclusive") {
		t.Errorf("prefix and system prompt together: %v", err)
	}
}
