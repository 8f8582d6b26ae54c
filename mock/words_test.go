package mock

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWordsAreSingleO200kTokens checks the property the whole package
// relies on: each word, with its leading space, is one o200k_base token,
// and needs no JSON escaping.
func TestWordsAreSingleO200kTokens(t *testing.T) {
	seen := map[string]bool{}
	for i, w := range words {
		if n := o200kCount(t, w); n != 1 {
			t.Errorf("words[%d] %q is %d o200k tokens, want 1", i, w, n)
		}
		if seen[w] {
			t.Errorf("words[%d] %q is a duplicate", i, w)
		}
		seen[w] = true
		if len(w) < 2 || w[0] != ' ' || strings.TrimLeft(w[1:], "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("words[%d] %q is not a space and lowercase ASCII letters", i, w)
		}
	}
}

// TestGeneratedTextCount checks that runs of words tokenise at the spaces,
// so that the count of a whole generated text (what AIPerf and llmtap
// compute) equals the number of tokens sent, for many seeded runs.
func TestGeneratedTextCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		n := 1 + rng.IntN(300)
		text := string(appendWords(nil, n, rng))
		if got := o200kCount(t, text); got != n {
			t.Fatalf("run %d: %d words count as %d tokens: %q", run, n, got, text)
		}
	}
}
