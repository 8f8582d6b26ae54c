package hf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tiny is a minimal valid tokenizer file around the parts a case changes.
func tiny(normalizer, pre, model string) string {
	if model == "" {
		model = `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<unk>":3},"merges":["a b"],"unk_token":"<unk>"}`
	}
	return `{"added_tokens":[],"normalizer":` + normalizer + `,"pre_tokenizer":` + pre + `,"model":` + model + `}`
}

// TestLoadErrors checks that a file the reader cannot follow exactly is refused, with an error
// that says which part and why.
func TestLoadErrors(t *testing.T) {
	nested := `null`
	for range MaxComponents + 1 {
		nested = `{"type":"Sequence","normalizers":[` + nested + `]}`
	}
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", `{"model":`, "reading tokenizer JSON"},
		{"no model", `{"model":null}`, "model: no model"},
		{"a WordPiece model is named as unsupported", tiny("null", "null", `{"type":"WordPiece","vocab":{}}`), `model type "WordPiece" is not supported`},
		{"a Unigram model is named as unsupported", tiny("null", "null", `{"type":"Unigram","vocab":[]}`), `model type "Unigram" is not supported`},
		{"a BERT normalizer is named as unsupported", tiny(`{"type":"BertNormalizer"}`, "null", ""), `normalizer: normalizer type "BertNormalizer" is not supported`},
		{"an unsupported normalizer inside a sequence says where", tiny(`{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Precompiled"}]}`, "null", ""), `normalizer: item 1 of the Sequence: normalizer type "Precompiled" is not supported`},
		{"a BERT pre-tokenizer is named as unsupported", tiny("null", `{"type":"BertPreTokenizer"}`, ""), `pre_tokenizer: pre-tokenizer type "BertPreTokenizer" is not supported`},
		{"a component without a type", tiny(`{"prepend":"x"}`, "null", ""), "component without a type"},
		{"a pattern that does not compile", tiny("null", `{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated"}`, ""), `pattern "(a"`},
		{"an unknown split behavior", tiny("null", `{"type":"Split","pattern":{"String":" "},"behavior":"Sideways"}`, ""), `unknown behavior "Sideways"`},
		{"an unknown prepend scheme", tiny("null", `{"type":"Metaspace","prepend_scheme":"sometimes"}`, ""), `unknown prepend_scheme "sometimes"`},
		{"components nested past the bound", tiny(nested, "null", ""), "more than 64 components"},
		{"a merge of three tokens", tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b c"]}`), `merges: merge 0: merge "a b c" is not two tokens`},
		{"a merge pair of three tokens", tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b","c"]]}`), "a merge pair has 3 parts"},
		{"a merge of unknown tokens", tiny("null", "null", `{"type":"BPE","vocab":{"a":0},"merges":["a z"]}`), `merge 0: "a" or "z" is not in the vocabulary`},
		{"a merge whose result is not in the vocabulary", tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}`), `the merged token "ab" is not in the vocabulary`},
		{"an unk_token outside the vocabulary", tiny("null", "null", `{"type":"BPE","vocab":{"a":0},"merges":[],"unk_token":"<unk>"}`), `unk_token "<unk>" is not in the vocabulary`},
		{"a negative id", tiny("null", "null", `{"type":"BPE","vocab":{"a":-1},"merges":[]}`), "negative id"},
		{"vocab is not an object", tiny("null", "null", `{"type":"BPE","vocab":[],"merges":[]}`), "vocab: not a JSON object"},
		{"merges is not an array", tiny("null", "null", `{"type":"BPE","vocab":{},"merges":{}}`), "merges: not a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestLoadBounds checks the bounds on the file and on its vocabulary, merges and added tokens
// (lowered here so that the test stays small).
func TestLoadBounds(t *testing.T) {
	defer func(f, n int) { maxFileBytes, maxTokens = f, n }(maxFileBytes, maxTokens)
	maxFileBytes, maxTokens = 200, 2
	tests := []struct {
		name, file, want string
	}{
		{"a file over the size bound", tiny("null", "null", `{"type":"BPE","vocab":{},"merges":[],"x":"`+strings.Repeat("x", 200)+`"}`), "larger than 200 bytes"},
		{"a vocabulary over the bound", tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"b":1,"c":2},"merges":[]}`), "vocab: more than 2 tokens"},
		{"merges over the bound", tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"aa":1},"merges":["a a","a a","a a"]}`), "merges: more than 2"},
		{"added tokens over the bound", `{"added_tokens":[{"id":0,"content":"x"},{"id":1,"content":"y"},{"id":2,"content":"z"}],"model":null}`, "added_tokens: more than 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	t.Run("LoadFile reads no more than the bound", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, []byte(strings.Repeat(" ", 300)+tiny("null", "null", "")), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), "larger than 200 bytes") {
			t.Fatalf("LoadFile error = %v", err)
		}
	})
}

// alternatives returns a pattern of n bytes or a few more: "a0|a1|a2|…", the shape of the
// 200,000-alternative pattern that took 34 s to compile (issue 35).
func alternatives(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString("a" + strconv.Itoa(i))
	}
	return b.String()
}

// TestLoadPatternBound checks that a Regex pattern longer than MaxPatternBytes is refused
// before it is compiled, in a Split pre-tokenizer and in a Replace normalizer, with an error
// naming the bound, and that one at the bound loads.
func TestLoadPatternBound(t *testing.T) {
	t.Parallel()
	long := alternatives(MaxPatternBytes + 1)
	atBound := alternatives(MaxPatternBytes - 8)
	atBound = atBound[:strings.LastIndexByte(atBound[:MaxPatternBytes-8], '|')]
	split := func(p string) string {
		return tiny("null", `{"type":"Split","pattern":{"Regex":"`+p+`"},"behavior":"Isolated"}`, "")
	}
	replace := func(p string) string {
		return tiny(`{"type":"Replace","pattern":{"Regex":"`+p+`"},"content":" "}`, "null", "")
	}
	want := fmt.Sprintf("longer than the %d bytes a pattern may have (hf.MaxPatternBytes)", MaxPatternBytes)
	for name, file := range map[string]string{"Split": split(long), "Replace": replace(long)} {
		if _, err := Load([]byte(file)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with a %d-byte pattern: error %v, want one containing %q", name, len(long), err, want)
		}
	}
	for name, file := range map[string]string{"Split": split(atBound), "Replace": replace(atBound)} {
		if _, err := Load([]byte(file)); err != nil {
			t.Errorf("%s with a %d-byte pattern: %v", name, len(atBound), err)
		}
	}
}

// BenchmarkLoadLongestPattern is the load time of a tokenizer whose pattern is at the bound.
func BenchmarkLoadLongestPattern(b *testing.B) {
	p := alternatives(MaxPatternBytes - 8)
	p = p[:strings.LastIndexByte(p, '|')]
	file := []byte(tiny("null", `{"type":"Split","pattern":{"Regex":"`+p+`"},"behavior":"Isolated"}`, ""))
	for b.Loop() {
		if _, err := Load(file); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMergeFormats checks that both ways a file writes its merges ("a b" and ["a", "b"], or a mix) give
// the same tokenizer, and that a merge whose tokens hold a space loads from the pair form.
func TestMergeFormats(t *testing.T) {
	vocab := `{"a":0,"b":1,"c":2,"ab":3,"abc":4," ":5,"a ":6}`
	for _, merges := range []string{`["a b","ab c"]`, `[["a","b"],["ab","c"]]`, `["a b",["ab","c"]]`} {
		tok, err := Load([]byte(tiny("null", "null", `{"type":"BPE","vocab":`+vocab+`,"merges":`+merges+`}`)))
		if err != nil {
			t.Fatal(err)
		}
		if ids, _ := tok.Encode("abcab"); len(ids) != 2 || ids[0] != 4 || ids[1] != 3 {
			t.Errorf("merges %s: ids %v, want [4 3]", merges, ids)
		}
	}
	tok, err := Load([]byte(tiny("null", "null", `{"type":"BPE","vocab":`+vocab+`,"merges":[["a"," "]]}`)))
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := tok.Encode("a "); len(ids) != 1 || ids[0] != 6 {
		t.Errorf("a merge with a space: ids %v, want [6]", ids)
	}
}
