package hf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoad feeds the loader arbitrary files (seeded with the committed tokenizers and broken
// ones): it must refuse or load without panicking, and a loaded tokenizer must encode.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"stories260k-legacy.json", "misc-subword.json", "misc-meta.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(tiny(`{"type":"Replace","pattern":{"Regex":"a+"},"content":"b"}`, `{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)"},"behavior":"Contiguous","invert":true}`, "")))
	f.Add([]byte(tiny("null", "null", `{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Load(data)
		if err != nil {
			return
		}
		if _, err := tok.Encode("Hello world <s> 123 ▁x\xff"); err != nil && !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("encode: %v", err)
		}
	})
}

// vocabIDs is every id a tokenizer can produce.
func vocabIDs(tok *Tokenizer) map[int]string {
	ids := map[int]string{}
	for s, id := range tok.model.vocab {
		ids[int(id)] = s
	}
	for _, set := range []*addedSet{tok.added, tok.addedNormalized} {
		if set != nil {
			for _, l := range set.byFirst {
				for _, a := range l {
					ids[int(a.id)] = a.content
				}
			}
		}
	}
	return ids
}

// decodeByteLevel spells ids back into bytes for a byte-level tokenizer.
func decodeByteLevel(t *testing.T, byID map[int]string, ids []int, added map[int]bool) string {
	rev := map[rune]byte{}
	for b, s := range byteSymbols {
		r, _ := utf8.DecodeRuneInString(s)
		rev[r] = byte(b)
	}
	var out []byte
	for _, id := range ids {
		if added[id] {
			out = append(out, byID[id]...)
			continue
		}
		for _, r := range byID[id] {
			b, ok := rev[r]
			if !ok {
				t.Fatalf("token %d (%q) is not spelled in byte symbols", id, byID[id])
			}
			out = append(out, b)
		}
	}
	return string(out)
}

// FuzzEncode encodes arbitrary text with every committed tokenizer: every id must be one the
// tokenizer has, and the byte-level tokenizers with no normalizer must spell the text back
// exactly (with invalid UTF-8 read as U+FFFD).
func FuzzEncode(f *testing.F) {
	g := readGolden(f)
	for _, c := range g["bytelevel-gpt2.json"] {
		f.Add(c.Text)
	}
	f.Add("\xff\xfe broken \xc3")
	type loaded struct {
		name  string
		tok   *Tokenizer
		byID  map[int]string
		added map[int]bool
	}
	var toks []loaded
	for name := range g {
		tok := loadTestdata(f, name)
		l := loaded{name: name, tok: tok, byID: vocabIDs(tok), added: map[int]bool{}}
		for id, s := range l.byID {
			if tok.model.vocab[s] != int32(id) {
				l.added[id] = true
			}
		}
		toks = append(toks, l)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, l := range toks {
			ids, err := l.tok.Encode(text)
			if err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
			for _, id := range ids {
				if _, ok := l.byID[id]; !ok {
					t.Fatalf("%s: id %d is not in the tokenizer", l.name, id)
				}
			}
			if l.name == "bytelevel-gpt2.json" || l.name == "bytelevel-llama3.json" {
				if got, want := decodeByteLevel(t, l.byID, ids, l.added), strings.ToValidUTF8(text, "\uFFFD"); got != want {
					t.Fatalf("%s: %q decodes to %q", l.name, want, got)
				}
			}
		}
	})
}
