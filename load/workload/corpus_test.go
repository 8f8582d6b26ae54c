package workload

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/tokens"
)

func corpus(t testing.TB) *Corpus {
	t.Helper()
	c, err := DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func count(t testing.TB, b []byte) int {
	t.Helper()
	n, err := tokens.Count(b)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAppendExactCount tokenizes prompts of many lengths, from every kind of starting point,
// and checks that each has exactly the tokens asked for.
func TestAppendExactCount(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{1, 2, 3, 7, 64, 511, 512, 513, 1000, 2048, 5000}
	for range 40 {
		lengths = append(lengths, 1+rng.IntN(3000))
	}
	for _, n := range lengths {
		start := rng.IntN(c.Len())
		p := c.Append(nil, n, start, false)
		if got := count(t, p); got != n {
			t.Fatalf("Append(n=%d, start=%d) has %d tokens: %q", n, start, got, p)
		}
		if strings.HasPrefix(string(p), " ") {
			t.Fatalf("a prompt must not start with a space: %q", p[:20])
		}
	}
}

// TestAppendEveryStart covers every corpus position as a starting point at a short length,
// where a boundary effect would show most.
func TestAppendEveryStart(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	for start := range c.Len() {
		for _, n := range []int{1, 5} {
			if got := count(t, c.Append(nil, n, start, false)); got != n {
				t.Fatalf("start %d, n %d: %d tokens", start, n, got)
			}
		}
	}
}

// TestAppendLeadingConcatenates checks that text appended with a leading space adds exactly its
// tokens to whatever precedes it: the property shared prefixes rely on.
func TestAppendLeadingConcatenates(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	p := c.Append(nil, 100, 3, false)
	p = c.Append(p, 77, 500, true)
	p = c.Append(p, 1, 9, true)
	if got := count(t, p); got != 178 {
		t.Fatalf("got %d tokens, want 178", got)
	}
}

func TestBlocks(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	tests := []struct {
		name   string
		n      int
		ids    []int64
		blocks int // how many ids the prompt uses
	}{
		{"exact blocks", 1024, []int64{1, 2}, 2},
		{"partial last block, as in Mooncake traces", 1100, []int64{1, 2, 3}, 3},
		{"fewer tokens than the ids imply use the first ids only", 600, []int64{1, 2, 3, 4}, 2},
		{"more tokens than the ids imply go into the last block", 2000, []int64{7}, 1},
		{"no ids still gives an exact prompt", 300, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := c.Blocks(nil, tt.n, tt.ids)
			if got := count(t, p); got != tt.n {
				t.Fatalf("%d tokens, want %d", got, tt.n)
			}
		})
	}
}

// TestBlocksSharePrefixes checks that requests whose hash ids share a prefix share the text of
// those blocks, byte for byte, and differ after it.
func TestBlocksSharePrefixes(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	a := string(c.Blocks(nil, 3*BlockTokens, []int64{10, 11, 12}))
	b := string(c.Blocks(nil, 3*BlockTokens, []int64{10, 11, 99}))
	d := string(c.Blocks(nil, 3*BlockTokens, []int64{42, 11, 12}))
	two := string(c.Blocks(nil, 2*BlockTokens, []int64{10, 11}))
	if !strings.HasPrefix(a, two) || !strings.HasPrefix(b, two) {
		t.Fatal("prompts with hash ids [10 11 …] do not start with the text of [10 11]")
	}
	if a == b {
		t.Fatal("different last hash ids gave the same prompt")
	}
	if a[:100] == d[:100] {
		t.Fatal("different first hash ids gave the same opening")
	}
	// Block 11 in second position has the same text after block 10 or block 42.
	tail := func(p string, first int64) string {
		return strings.TrimPrefix(p, string(c.Blocks(nil, BlockTokens, []int64{first})))
	}
	if tail(a, 10) != tail(d, 42) {
		t.Fatal("the same hash ids after different first blocks gave different texts")
	}
}

func TestNewCorpusErrors(t *testing.T) {
	t.Parallel()
	if _, err := NewCorpus("  \n "); err == nil {
		t.Error("an empty corpus was accepted")
	}
	// Long rare words are several tokens each, so no count of 1 is reachable.
	if _, err := NewCorpus("Antidisestablishmentarianism Floccinaucinihilipilification"); err == nil {
		t.Error("a corpus without single-token words was accepted")
	}
}

func BenchmarkAppend2048(b *testing.B) {
	c := corpus(b)
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = c.Append(buf[:0], 2048, i, false)
	}
}
