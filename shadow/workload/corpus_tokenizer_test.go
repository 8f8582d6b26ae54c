package workload

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/tokens"
)

// TestCorpusForTokenizer: prompts built with a Hugging Face tokenizer's corpus have exactly the
// requested number of that tokenizer's tokens (counted whole by it), for every tokenizer in the
// reader's test data (byte-level GPT-2, Llama 3 and Qwen 2 pipelines, SentencePiece BPE in its
// legacy Llama 2 and Metaspace forms, and the component tests), and the same requests differ in
// o200k tokens (the sizing follows the tokenizer, not o200k_base). The one tokenizer with no
// single-token word (misc-meta: a character vocabulary) is refused, saying so.
func TestCorpusForTokenizer(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "telemetry", "tokens", "hf", "testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "golden") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := tokens.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			corpus, err := CorpusFor(c)
			if filepath.Base(f) == "misc-meta.json" {
				if err == nil || !strings.Contains(err.Error(), "no single-token word") {
					t.Errorf("CorpusFor(%s) = %v, want a refusal: no word is one token", c.Name(), err)
				}
				tested++
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			differs := 0
			for range 200 {
				n := 1 + rng.IntN(1500)
				p := corpus.Random(nil, n, rng)
				if got, err := c.Count(p); err != nil || got != n {
					t.Fatalf("a prompt built for %d %s tokens counts %d (err %v)", n, c.Name(), got, err)
				}
				if o, _ := tokens.Count(p); o != n {
					differs++
				}
			}
			if differs == 0 {
				t.Errorf("every prompt has the same o200k count as %s tokens: the corpus was not counted by the tokenizer", c.Name())
			}
			tested++
		})
	}
	if tested < 9 {
		t.Errorf("%d tokenizer files tested, want the 9 of the reader's test data", tested)
	}
}

// TestCorpusForRefusesANonAdditiveCounter: a counter for which text does not add up at spaces
// (here one token per word plus one per 200 bytes of the whole text) is refused with the
// first prompt that differs, naming the counter.
func TestCorpusForRefusesANonAdditiveCounter(t *testing.T) {
	_, err := CorpusFor(lengthy{})
	if err == nil || !strings.Contains(err.Error(), "counts") || !strings.Contains(err.Error(), "lengthy") {
		t.Fatalf("CorpusFor(lengthy) = %v, want a refusal naming the counter and the miscount", err)
	}
}

// TestCorpusForCountsAStartMarkOnce: a counter that adds one token to every text it counts
// (a BOS token) gets prompts of exactly n of its tokens, the mark counted once, for n ≥ 2; a
// 1-token prompt cannot be made (the mark alone is one), so CorpusFor refuses it, and building
// one ends instead of looping.
func TestCorpusForCountsAStartMarkOnce(t *testing.T) {
	bos := withBOS{}
	corpus, err := NewCorpusCounted(corpusText, bos.Count)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 10, 100, 1000} {
		p := corpus.Append(nil, n, 5, false)
		if got, _ := bos.Count(p); got != n {
			t.Errorf("a prompt built for %d tokens with a BOS counts %d", n, got)
		}
	}
	if p := corpus.Append(nil, 1, 0, false); len(p) != 0 {
		t.Errorf("a 1-token prompt with a BOS: %q, want none", p)
	}
	if _, err := CorpusFor(bos); err == nil || !strings.Contains(err.Error(), "no prompt of 1 tokens") {
		t.Errorf("CorpusFor(with-bos) = %v, want a refusal at the 1-token prompt", err)
	}
}

type lengthy struct{}

func (lengthy) Count(b []byte) (int, error) { return len(strings.Fields(string(b))) + len(b)/200, nil }
func (lengthy) Name() string                { return "lengthy" }

type withBOS struct{}

func (withBOS) Count(b []byte) (int, error) {
	n, err := tokens.Count(b)
	return n + 1, err
}
func (withBOS) Name() string { return "with-bos" }
