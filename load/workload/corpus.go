package workload

import (
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/llmtap/llmtap/telemetry/tokens"
)

//go:embed corpus.txt
var corpusText string

// BlockTokens is the number of prompt tokens one hash id stands for (Mooncake's and AIPerf's
// default block size).
const BlockTokens = 512

// Corpus is a text cut into pieces that tokenize independently of their neighbours, each with
// its o200k_base token count. It is immutable once built and safe for concurrent use.
type Corpus struct {
	pieces []string // each " word": a space, then non-space characters
	counts []int    // tokens of pieces[i], with its leading space
	first  []int    // tokens of pieces[i] without its leading space (a prompt's first piece)
}

var (
	defaultOnce   sync.Once
	defaultCorpus *Corpus
	defaultErr    error
)

// DefaultCorpus returns the embedded public-domain corpus (see the package documentation),
// tokenized on first use: tens of milliseconds to load the vocabulary and count the pieces.
func DefaultCorpus() (*Corpus, error) {
	defaultOnce.Do(func() { defaultCorpus, defaultErr = NewCorpus(corpusText) })
	return defaultCorpus, defaultErr
}

// NewCorpus cuts text into pieces at whitespace and counts each piece's o200k_base tokens. It
// fails when the text has no single-token piece, without which not every count could be
// reached exactly.
func NewCorpus(text string) (*Corpus, error) { return NewCorpusCounted(text, tokens.Count) }

// CorpusFor returns the embedded corpus counted by c (nil or o200k_base: DefaultCorpus), so
// that prompts have exactly the requested number of c's tokens. It fails when c does not
// count text additively at spaces (see CheckAdditive), since prompts could then not be sized
// exactly with it.
func CorpusFor(c tokens.Counter) (*Corpus, error) {
	if c == nil || c.Name() == tokens.Encoding {
		return DefaultCorpus()
	}
	corpus, err := NewCorpusCounted(corpusText, c.Count)
	if err != nil {
		return nil, err
	}
	if err := corpus.CheckAdditive(c.Count); err != nil {
		return nil, fmt.Errorf("workload: prompts cannot be sized in %s tokens: %w", c.Name(), err)
	}
	return corpus, nil
}

// CheckAdditive builds prompts of many lengths, alone and after a first block (as Blocks
// does), and counts each whole with count: a tokenizer whose pre-tokenizer never joins a space
// to the text before it counts them exactly as built. It reports the first that differs.
func (c *Corpus) CheckAdditive(count func([]byte) (int, error)) error {
	var buf []byte
	for _, n := range []int{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 512, 700, 1100} {
		for _, start := range []int{0, len(c.pieces) / 3, 2 * len(c.pieces) / 3} {
			if n > BlockTokens {
				buf = c.Blocks(buf[:0], n, []int64{int64(start), int64(start) + 1, int64(start) + 2})
			} else {
				buf = c.Append(buf[:0], n, start, false)
			}
			if len(buf) == 0 {
				return fmt.Errorf("no prompt of %d tokens can be built", n)
			}
			got, err := count(buf)
			if err != nil {
				return err
			}
			if got != n {
				return fmt.Errorf("a prompt built for %d tokens counts %d", n, got)
			}
		}
	}
	return nil
}

// NewCorpusCounted is NewCorpus with the pieces counted by count.
func NewCorpusCounted(text string, count func([]byte) (int, error)) (*Corpus, error) {
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil, errors.New("workload: empty corpus")
	}
	c := &Corpus{
		pieces: make([]string, len(words)),
		counts: make([]int, len(words)),
		first:  make([]int, len(words)),
	}
	cache := map[string]int{}
	countPiece := func(s string) (int, error) {
		if n, ok := cache[s]; ok {
			return n, nil
		}
		n, err := count([]byte(s))
		if err != nil {
			return 0, fmt.Errorf("workload: counting corpus tokens: %w", err)
		}
		cache[s] = n
		return n, nil
	}
	// A piece that follows other text is counted in context, as the count of a word followed
	// by it less the count of the word alone: a tokenizer that marks the start of a text (a
	// SentencePiece-style one prepending its word marker, one adding a BOS token) counts that
	// mark once per prompt, on its first piece, which is counted alone. For o200k_base the two
	// ways agree.
	const lead = "a"
	base, err := countPiece(lead)
	if err != nil {
		return nil, err
	}
	single := false
	for i, w := range words {
		c.pieces[i] = " " + w
		n, err := countPiece(lead + c.pieces[i])
		if err != nil {
			return nil, err
		}
		c.counts[i] = n - base
		if c.counts[i] < 1 {
			return nil, fmt.Errorf("workload: %q counts %d tokens after %q, which counts %d alone: the counter is not additive", c.pieces[i], n, lead, base)
		}
		if c.first[i], err = countPiece(w); err != nil {
			return nil, err
		}
		single = single || c.counts[i] == 1
	}
	if !single {
		return nil, errors.New("workload: corpus has no single-token word, so exact prompt lengths are not reachable")
	}
	return c, nil
}

// Len returns the number of pieces (words) in the corpus.
func (c *Corpus) Len() int { return len(c.pieces) }

// Append appends text of exactly n tokens to dst, made of consecutive corpus pieces starting at
// piece start (modulo the corpus length, wrapping around at its end). When leading is true the
// text starts with a space, so it can follow other prompt text and keep its count; otherwise
// it starts the prompt and its first piece loses its space. n ≤ 0 appends nothing.
func (c *Corpus) Append(dst []byte, n, start int, leading bool) []byte {
	if n <= 0 {
		return dst
	}
	i := start % len(c.pieces)
	if i < 0 {
		i += len(c.pieces)
	}
	left, idle := n, 0
	for left > 0 && idle <= len(c.pieces) {
		p, k := c.pieces[i], c.counts[i]
		if !leading {
			p, k = p[1:], c.first[i]
		}
		if k <= left {
			dst = append(dst, p...)
			left -= k
			leading, idle = true, 0
		} else {
			idle++
		}
		// A piece that would overshoot is skipped; the loop ends because single-token pieces
		// exist (NewCorpus checks), and every pass of the corpus takes at least one of them.
		// Only a prompt's first piece may have none (a counter that counts every text's start
		// as a token cannot make a 1-token prompt): after a pass that took nothing the prompt
		// is left short.
		if i++; i == len(c.pieces) {
			i = 0
		}
	}
	return dst
}

// Random appends a prompt of exactly n tokens starting at a random corpus position drawn from
// rng (AIPerf's sonnet corpus works the same way: a random window with wraparound).
func (c *Corpus) Random(dst []byte, n int, rng *rand.Rand) []byte {
	return c.Append(dst, n, rng.IntN(len(c.pieces)), false)
}

// Blocks appends a prompt of exactly n tokens whose BlockTokens-token blocks are the texts of
// hashIDs: every block but the last is BlockTokens tokens, the last holds the remainder
// (n − (len−1)·BlockTokens). Equal ids give equal block texts, wherever they appear. When n is
// shorter than the ids imply, only the first ceil(n/BlockTokens) ids are used; when it is
// longer, the last block holds everything past the others. Without ids the prompt starts at
// the corpus position of id 0.
func (c *Corpus) Blocks(dst []byte, n int, hashIDs []int64) []byte {
	if n <= 0 {
		return dst
	}
	if len(hashIDs) == 0 {
		return c.Append(dst, n, 0, false)
	}
	k := min(len(hashIDs), (n+BlockTokens-1)/BlockTokens)
	for b := range k {
		size := BlockTokens
		if b == k-1 {
			size = n - (k-1)*BlockTokens
		}
		dst = c.Append(dst, size, c.blockStart(hashIDs[b]), b > 0)
	}
	return dst
}

// blockStart maps a hash id to the corpus position its block text starts at, through
// SplitMix64's finalizer so that neighbouring ids start far apart.
func (c *Corpus) blockStart(id int64) int {
	z := uint64(id) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % uint64(len(c.pieces)))
}

// TracePrompt appends the synthetic prompt of a trace request: exactly n tokens (at least 1)
// built from its prefix blocks when it has hashIDs, so that requests sharing a prefix in the
// trace share it in the prompts; without ids a prompt of its own, starting where its index in
// the trace says. `llmtap replay` and the proxy's trace shadow load both build prompts so.
func (c *Corpus) TracePrompt(dst []byte, n int, hashIDs []int64, index int) []byte {
	n = max(n, 1)
	if len(hashIDs) == 0 {
		return c.Append(dst, n, index*7919, false)
	}
	return c.Blocks(dst, n, hashIDs)
}

// TraceBody is the body of a trace request replayed with a synthetic prompt: TracePrompt's
// prompt and outputLength as the output limit.
func (s BodySpec) TraceBody(c *Corpus, inputLength, outputLength int, hashIDs []int64, index int) ([]byte, error) {
	return s.Build(string(c.TracePrompt(make([]byte, 0, inputLength*5), inputLength, hashIDs, index)), outputLength)
}
