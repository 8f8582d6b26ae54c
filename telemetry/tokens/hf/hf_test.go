package hf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// golden is testdata/golden.json: for each tokenizer file, texts and the ids the reference
// implementation (Hugging Face tokenizers 0.23.2, through testdata/golden.js) gave them.
type golden map[string][]struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func readGolden(t testing.TB) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func loadTestdata(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tok, err := LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestGolden checks every committed tokenizer against the reference implementation's ids:
// byte-level BPE in the GPT-2, Llama-3 and Qwen2 pipelines, and SentencePiece-style BPE
// (Llama 2's legacy normalizer and the Metaspace form) with byte fallback.
func TestGolden(t *testing.T) {
	g := readGolden(t)
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) != 9 {
		t.Fatalf("golden.json covers %d tokenizers, want 9: %v", len(names), names)
	}
	for _, name := range names {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			tok := loadTestdata(t, name)
			for _, c := range g[name] {
				got, err := tok.Encode(c.Text)
				if err != nil {
					t.Fatalf("%q: %v", c.Text, err)
				}
				if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
					t.Errorf("%q:\n got %v\nwant %v", c.Text, got, c.IDs)
				}
			}
		})
	}
}

// TestConcurrentEncode encodes from several goroutines with one tokenizer, as the handlers
// and runs that share a file do: every result must be the golden one (run with -race).
func TestConcurrentEncode(t *testing.T) {
	g := readGolden(t)
	tok := loadTestdata(t, "bytelevel-llama3.json")
	cases := g["bytelevel-llama3.json"]
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, c := range cases {
				got, err := tok.Encode(c.Text)
				if err != nil || (!slices.Equal(got, c.IDs) && len(got)+len(c.IDs) > 0) {
					t.Errorf("%q: %v, %v; want %v", c.Text, got, err, c.IDs)
				}
			}
		})
	}
	wg.Wait()
}
