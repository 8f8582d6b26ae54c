package tokens

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"

	"github.com/llmtap/llmtap/telemetry/tokens/hf"
)

// o200kPattern is o200k_base's pre-tokenization pattern (tiktoken's, as tiktoken-go has it).
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var (
	o200kHFOnce sync.Once
	o200kHF     *hf.Tokenizer
	o200kHFData []byte // the tokenizer.json
	o200kHFErr  error
)

// o200kAsHF builds in memory the Hugging Face tokenizer file that spells o200k_base, the way
// transformers' TikTokenConverter does for tiktoken vocabularies (Llama 3's among them): the
// ranks become the vocabulary, in GPT-2's byte symbols, and each token of two bytes or more
// becomes the merge of the two parts that byte-pair encoding with the lower ranks leaves of
// it; the pattern becomes a Split pre-tokenizer before a ByteLevel one, and ignore_merges
// stands for tiktoken's whole-piece lookup. A 200,000-token file of 8 MB: a realistic size.
func o200kAsHF(tb testing.TB) *hf.Tokenizer {
	tb.Helper()
	o200kHFOnce.Do(func() {
		c, err := tokenizer.Get(tokenizer.O200kBase)
		if err != nil {
			o200kHFErr = err
			return
		}
		ranks := map[string]int{}
		var byRank []string
		for id := uint(0); id < 200019; id++ {
			s, err := c.Decode([]uint{id})
			if err != nil {
				continue // the special tokens and unused ids
			}
			ranks[s] = int(id)
			byRank = append(byRank, s)
		}
		spell := hf.SpellBytes
		vocab := make(map[string]int, len(ranks))
		merges := make([][2]string, 0, len(ranks))
		for _, tok := range byRank {
			rank := ranks[tok]
			vocab[spell(tok)] = rank
			if len(tok) < 2 {
				continue
			}
			parts := make([]string, len(tok))
			for i := 0; i < len(tok); i++ {
				parts[i] = tok[i : i+1]
			}
			for len(parts) > 2 {
				best, bestRank := -1, rank
				for i := 0; i+1 < len(parts); i++ {
					if r, ok := ranks[parts[i]+parts[i+1]]; ok && r < bestRank {
						best, bestRank = i, r
					}
				}
				if best < 0 {
					break
				}
				parts = slices.Replace(parts, best, best+2, parts[best]+parts[best+1])
			}
			if len(parts) == 2 {
				merges = append(merges, [2]string{spell(parts[0]), spell(parts[1])})
			}
		}
		file := map[string]any{
			"added_tokens": []any{},
			"normalizer":   nil,
			"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]string{"Regex": o200kPattern}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
			}},
			"model": map[string]any{"type": "BPE", "ignore_merges": true, "vocab": vocab, "merges": merges},
		}
		o200kHFData, o200kHFErr = json.Marshal(file)
		if o200kHFErr == nil {
			o200kHF, o200kHFErr = hf.Load(o200kHFData)
		}
	})
	if o200kHFErr != nil {
		tb.Fatal(o200kHFErr)
	}
	return o200kHF
}

// benchText is English prose and code, the kind of text prompts and answers hold.
func benchText(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("hf", "testdata", "golden.js"))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// TestHFReadsO200k loads o200k_base as a Hugging Face tokenizer file and checks that package
// hf gives the ids tiktoken-go does, on every golden text and on a file of prose and code: a
// second check of the reader, on a vocabulary of real size, against an independent encoder.
func TestHFReadsO200k(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200,000-token tokenizer")
	}
	tok := o200kAsHF(t)
	var texts []string
	data, err := os.ReadFile(filepath.Join("hf", "testdata", "golden-texts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &texts); err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(benchText(t)))
	for _, text := range texts {
		want, err := IDs([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%.40q: %d tokens, tiktoken-go %d", text, len(got), len(want))
			continue
		}
		for i := range got {
			if uint(got[i]) != want[i] {
				t.Errorf("%.40q: token %d is %d, tiktoken-go %d", text, i, got[i], want[i])
				break
			}
		}
	}
}

// BenchmarkCountText compares counting the same text with o200k_base through tiktoken-go (the
// default) and through package hf reading the same vocabulary as a tokenizer.json.
func BenchmarkCountText(b *testing.B) {
	text := benchText(b)
	tok := o200kAsHF(b)
	b.Run("o200k", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := Count(text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hf", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := tok.Count(text); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoadO200kFile is the cost of reading a tokenizer file of real size once (an 8 MB
// tokenizer.json of 200,000 tokens and merges), paid when a config or a run starts.
func BenchmarkLoadO200kFile(b *testing.B) {
	o200kAsHF(b)
	b.SetBytes(int64(len(o200kHFData)))
	for b.Loop() {
		if _, err := hf.Load(o200kHFData); err != nil {
			b.Fatal(err)
		}
	}
}
