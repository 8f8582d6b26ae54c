package workload

import (
	"encoding/json"
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

// TestShareGPTCountedByTheTokenizer: ShareGPT entries are kept and their output limits set by
// the given tokenizer's counts, as AIPerf's loader counts with the model's tokenizer: a reply's
// limit is its count in that tokenizer, and a prompt within 1,024 o200k tokens but over 1,024
// of the small vocabulary's is left out with it and kept without it.
func TestShareGPTCountedByTheTokenizer(t *testing.T) {
	c, err := tokens.Load(filepath.Join("..", "..", "telemetry", "tokens", "hf", "testdata", "stories260k-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	corpus, err := DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	long := string(corpus.Append(nil, 900, 0, false)) // 900 o200k tokens
	if n, _ := c.Count([]byte(long)); n <= 1024 {
		t.Fatalf("the long prompt counts %d in %s: the test needs over 1024", n, c.Name())
	}
	reply := "The lighthouse keeper climbed the stairs every evening to light the lamp."
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	doc := `[{"conversations": [{"from": "human", "value": "Tell me a story about the sea, please."}, {"from": "gpt", "value": ` + q(reply) + `}]},` +
		`{"conversations": [{"from": "human", "value": ` + q(long) + `}, {"from": "gpt", "value": ` + q(reply) + `}]}]`
	plain, err := ReadDataset(strings.NewReader(doc), "s.json", DatasetShareGPT)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := ReadDatasetCounted(strings.NewReader(doc), "s.json", DatasetShareGPT, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Conversations) != 2 || len(counted.Conversations) != 1 {
		t.Fatalf("kept %d entries in o200k, %d in %s; want 2 and 1 (the long prompt left out)", len(plain.Conversations), len(counted.Conversations), c.Name())
	}
	wantO, _ := tokens.Count([]byte(reply))
	wantT, _ := c.Count([]byte(reply))
	if got := plain.Conversations[0].Turns[0].MaxTokens; got != wantO {
		t.Errorf("o200k output limit %d, want %d", got, wantO)
	}
	if got := counted.Conversations[0].Turns[0].MaxTokens; got != wantT || wantT == wantO {
		t.Errorf("%s output limit %d, want %d (o200k: %d)", c.Name(), got, wantT, wantO)
	}
}
