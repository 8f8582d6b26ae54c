package hf

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of added_tokens: text that is cut out before the model sees it and
// becomes its own id.
type addedToken struct {
	content                    string
	id                         int32
	singleWord, lstrip, rstrip bool
}

// addedSet finds added tokens in text: leftmost match first, the longest there.
type addedSet struct {
	byFirst map[byte][]addedToken // by first byte, longest first
}

func newAddedSet(toks []addedToken) *addedSet {
	if len(toks) == 0 {
		return nil
	}
	a := &addedSet{byFirst: map[byte][]addedToken{}}
	for _, t := range toks {
		if t.content != "" {
			a.byFirst[t.content[0]] = append(a.byFirst[t.content[0]], t)
		}
	}
	for _, l := range a.byFirst {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].content) > len(l[j].content) })
	}
	return a
}

// segment is a part of the text: an added token's id, or text for the rest of the pipeline.
type segment struct {
	text  string
	id    int32 // the added token's id; -1 for text
	first bool  // begins at the start of the original text
}

// cut splits text at the added tokens it holds.
func (a *addedSet) cut(text string, first bool, out []segment) []segment {
	if a == nil {
		return append(out, segment{text: text, id: -1, first: first})
	}
	start := 0 // where the text not yet emitted begins
	for i := 0; i < len(text); {
		t, ok := a.at(text, i)
		if !ok {
			i++
			continue
		}
		from, to := i, i+len(t.content)
		if t.lstrip {
			for from > start {
				r, n := utf8.DecodeLastRuneInString(text[start:from])
				if !unicode.IsSpace(r) {
					break
				}
				from -= n
			}
		}
		if t.rstrip {
			for to < len(text) {
				r, n := utf8.DecodeRuneInString(text[to:])
				if !unicode.IsSpace(r) {
					break
				}
				to += n
			}
		}
		if from > start {
			out = append(out, segment{text: text[start:from], id: -1, first: first && start == 0})
		}
		out = append(out, segment{id: t.id})
		start, i = to, to
	}
	if start < len(text) {
		out = append(out, segment{text: text[start:], id: -1, first: first && start == 0})
	}
	return out
}

// at returns the longest added token that matches text at i.
func (a *addedSet) at(text string, i int) (addedToken, bool) {
	for _, t := range a.byFirst[text[i]] {
		if len(text)-i < len(t.content) || text[i:i+len(t.content)] != t.content {
			continue
		}
		if t.singleWord && (endsWithWord(text[:i]) || startsWithWord(text[i+len(t.content):])) {
			continue
		}
		return t, true
	}
	return addedToken{}, false
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}
