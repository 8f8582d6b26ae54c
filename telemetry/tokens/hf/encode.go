package hf

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer encodes text as a tokenizer.json file describes. It is safe for concurrent use.
type Tokenizer struct {
	added           *addedSet // added tokens matched in the raw text
	addedNormalized *addedSet // added tokens matched after normalization
	normalizer      normalizer
	pre             preTokenizer
	model           *bpe
}

// Encode returns the token ids of text, without the template tokens a post-processor would
// add. Invalid UTF-8 is read as U+FFFD. It fails only when a pattern match times out.
func (t *Tokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, string(utf8.RuneError))
	}
	var ids []int
	for _, seg := range t.added.cut(text, true, nil) {
		if seg.id >= 0 {
			ids = append(ids, int(seg.id))
			continue
		}
		s := seg.text
		if t.normalizer != nil {
			var err error
			if s, err = t.normalizer.normalize(s); err != nil {
				return nil, err
			}
		}
		for _, sub := range t.addedNormalized.cut(s, seg.first, nil) {
			if sub.id >= 0 {
				ids = append(ids, int(sub.id))
				continue
			}
			if sub.text == "" {
				continue // normalized away: nothing to pre-tokenize (no Metaspace "▁" either)
			}
			ps := []piece{{s: sub.text, first: sub.first}}
			if t.pre != nil {
				var err error
				if ps, err = t.pre.split(ps); err != nil {
					return nil, err
				}
			}
			for _, p := range ps {
				ids = t.model.encodeWord(p.s, ids)
			}
		}
	}
	return ids, nil
}

// Count returns the number of tokens of text (see Encode).
func (t *Tokenizer) Count(text []byte) (int, error) {
	ids, err := t.Encode(string(text))
	return len(ids), err
}

func isNumeric(r rune) bool { return unicode.IsNumber(r) }

func isSpace(r rune) bool { return unicode.IsSpace(r) }
