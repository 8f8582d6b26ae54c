package hf

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// piece is a segment of text on its way to the model. first reports whether it begins at the
// start of the original text (Metaspace's "first" prepend scheme reads it).
type piece struct {
	s     string
	first bool
}

// preTokenizer splits every piece into smaller pieces (and may rewrite them).
type preTokenizer interface {
	split(ps []piece) ([]piece, error)
}

// behavior is what a split does with the delimiters it finds (the reference's
// SplitDelimiterBehavior).
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var behaviors = map[string]behavior{
	"Removed": removed, "Isolated": isolated, "MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext": mergedWithNext, "Contiguous": contiguous,
}

// span is a byte range of a piece and whether it is a delimiter.
type span struct {
	start, end int
	match      bool
}

// matcher finds the delimiters of a string, as spans covering all of it in order.
type matcher func(s string) ([]span, error)

// cover turns delimiter ranges into spans covering s.
func cover(s string, ranges [][2]int) []span {
	out := make([]span, 0, 2*len(ranges)+1)
	prev := 0
	for _, r := range ranges {
		if r[0] != prev {
			out = append(out, span{prev, r[0], false})
		}
		out = append(out, span{r[0], r[1], true})
		prev = r[1]
	}
	if prev != len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

func regexMatcher(re *regexp2.Regexp) matcher {
	return func(s string) ([]span, error) {
		found, err := re.FindAllStringIndex(s, -1)
		if err != nil {
			return nil, err
		}
		ranges := make([][2]int, 0, len(found))
		for _, f := range found {
			if f[1] > f[0] {
				ranges = append(ranges, [2]int{f[0], f[1]})
			}
		}
		return cover(s, ranges), nil
	}
}

func literalMatcher(lit string) matcher {
	return func(s string) ([]span, error) {
		var ranges [][2]int
		if lit != "" {
			for off := 0; ; {
				i := strings.Index(s[off:], lit)
				if i < 0 {
					break
				}
				ranges = append(ranges, [2]int{off + i, off + i + len(lit)})
				off += i + len(lit)
			}
		}
		return cover(s, ranges), nil
	}
}

// runeMatcher makes every character for which is returns true a delimiter of its own.
func runeMatcher(is func(rune) bool) matcher {
	return func(s string) ([]span, error) {
		var ranges [][2]int
		for i, r := range s {
			if is(r) {
				ranges = append(ranges, [2]int{i, i + utf8.RuneLen(r)})
			}
		}
		return cover(s, ranges), nil
	}
}

// splitter is the reference's Split: delimiters by a matcher, then a behavior.
type splitter struct {
	find   matcher
	how    behavior
	invert bool
}

func (sp splitter) split(ps []piece) ([]piece, error) {
	out := make([]piece, 0, len(ps))
	for _, p := range ps {
		spans, err := sp.find(p.s)
		if err != nil {
			return nil, err
		}
		if sp.invert {
			for i := range spans {
				spans[i].match = !spans[i].match
			}
		}
		for _, r := range arrange(spans, sp.how) {
			if r.end > r.start {
				out = append(out, piece{s: p.s[r.start:r.end], first: p.first && r.start == 0})
			}
		}
	}
	return out, nil
}

// arrange applies a behavior to the spans of a string: the ranges that become pieces.
func arrange(spans []span, how behavior) []span {
	var out []span
	switch how {
	case removed:
		for _, s := range spans {
			if !s.match {
				out = append(out, s)
			}
		}
	case isolated:
		out = spans
	case mergedWithPrevious:
		prevMatch := false
		for _, s := range spans {
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
	case mergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = s.start
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case contiguous:
		prevMatch := false
		for i, s := range spans {
			if i > 0 && s.match == prevMatch {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
	}
	return out
}

// byteLevel is the ByteLevel pre-tokenizer: an optional leading space, an optional split by
// GPT-2's pattern, then every byte spelled as its byte symbol.
type byteLevel struct {
	addPrefixSpace bool
	re             *splitter // nil when use_regex is false
}

func (b byteLevel) split(ps []piece) ([]piece, error) {
	if b.addPrefixSpace {
		for i := range ps {
			if !strings.HasPrefix(ps[i].s, " ") {
				ps[i].s = " " + ps[i].s
			}
		}
	}
	if b.re != nil {
		var err error
		if ps, err = b.re.split(ps); err != nil {
			return nil, err
		}
	}
	for i := range ps {
		ps[i].s = toByteSymbols(ps[i].s)
	}
	return ps, nil
}

// metaspace is the Metaspace pre-tokenizer: spaces become the replacement character ("▁"),
// which is prepended as the scheme says, and optionally splits before each one.
type metaspace struct {
	replacement string
	scheme      string    // "always", "first" or "never"
	splitOn     *splitter // nil when split is false
}

func (m metaspace) split(ps []piece) ([]piece, error) {
	for i := range ps {
		s := strings.ReplaceAll(ps[i].s, " ", m.replacement)
		if !strings.HasPrefix(s, m.replacement) &&
			(m.scheme == "always" || (m.scheme == "first" && ps[i].first)) {
			s = m.replacement + s
		}
		ps[i].s = s
	}
	if m.splitOn != nil {
		return m.splitOn.split(ps)
	}
	return ps, nil
}

type preTokenizers []preTokenizer

func (pt preTokenizers) split(ps []piece) ([]piece, error) {
	var err error
	for _, p := range pt {
		if ps, err = p.split(ps); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// isPunctuation is the reference's punctuation test: ASCII punctuation or a Unicode P*
// character.
func isPunctuation(r rune) bool {
	return (r < utf8.RuneSelf && unicode.IsPrint(r) && !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ') ||
		unicode.IsPunct(r)
}
