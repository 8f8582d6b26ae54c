package tokens

import (
	"unicode"
	"unicode/utf8"
)

// splitO200k cuts s, valid UTF-8, into the pieces o200k_base's pre-tokenizer pattern matches,
// in order; together they are s. It is that pattern run by hand, as the regexp2 program
// tiktoken-go generates from it (see the tree atop the generated file of its codec package):
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
//
// with the backtracking regexp2 does (first alternative that matches, greedy loops giving
// back one character at a time) and its classes (\s is unicode.IsSpace, \p{…} Go's unicode
// tables). Matching the pattern with regexp2 costs an allocation per piece and most of the
// tokenizer's time; this does the same without either. TestSplitMatchesThePattern and
// FuzzSplitO200k hold it to the library's output.
func splitO200k(s string, yield func(piece string)) {
	for i := 0; i < len(s); {
		end := matchO200k(s, i)
		yield(s[i:end])
		i = end
	}
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// isUpper is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpper(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLower is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLower(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// isLead is [^\r\n\p{L}\p{N}], the optional character before a word.
func isLead(r rune) bool { return r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// run returns the end of the longest run of characters in class from i.
func run(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// matchO200k returns the end of the pattern's match at i (there always is one, never empty).
func matchO200k(s string, i int) int {
	r0, n0 := runeAt(s, i)
	// The two word alternatives, each with its optional leading character first, then without.
	for _, upperFirst := range [2]bool{false, true} {
		if isLead(r0) {
			if end, ok := word(s, i+n0, upperFirst); ok {
				return end
			}
		}
		if end, ok := word(s, i, upperFirst); ok {
			return end
		}
	}
	if isNumber(r0) { // \p{N}{1,3}
		j := i + n0
		for k := 1; k < 3 && j < len(s); k++ {
			r, n := runeAt(s, j)
			if !isNumber(r) {
				break
			}
			j += n
		}
		return j
	}
	// " ?[^\s\p{L}\p{N}]+[\r\n/]*": the space is not a symbol, so it is never given back.
	j := i
	if r0 == ' ' {
		j++
	}
	if k := run(s, j, isSymbol); k > j {
		for k < len(s) && (s[k] == '\r' || s[k] == '\n' || s[k] == '/') {
			k++
		}
		return k
	}
	// Whitespace: "\s*[\r\n]+" ends after the run's last line break; else "\s+(?!\S)" leaves
	// the run's last character to the word after it; else "\s+".
	k, last, lastBreak := i, i, -1
	for k < len(s) {
		r, n := runeAt(s, k)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastBreak = k
		}
		last = k
		k += n
	}
	switch {
	case lastBreak >= 0:
		return lastBreak + 1
	case k == len(s) || last == i:
		return k
	default:
		return last
	}
}

// word matches, from j, "U*L+C?" (upperFirst false: the first alternative) or "U+L*C?"
// (true: the second), where U is isUpper, L isLower and C a contraction.
func word(s string, j int, upperFirst bool) (int, bool) {
	k := run(s, j, isUpper)
	if upperFirst {
		if k == j {
			return 0, false
		}
		return contraction(s, run(s, k, isLower)), true
	}
	// U* gives back one character at a time until L+ can start.
	for t := k; ; {
		if t < len(s) {
			if r, _ := runeAt(s, t); isLower(r) {
				return contraction(s, run(s, t, isLower)), true
			}
		}
		if t == j {
			return 0, false
		}
		_, n := utf8.DecodeLastRuneInString(s[j:t])
		t -= n
	}
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	lower := func(k int) byte {
		if k < len(s) {
			return s[k] | 0x20
		}
		return 0
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return i + 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return i + 3
		}
	}
	if s[i+1] == 0xC5 && i+2 < len(s) && s[i+2] == 0xBF { // ſ, which (?i) takes for s
		return i + 3
	}
	return i
}
