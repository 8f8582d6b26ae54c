package decode

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the byte-level JSON scanning the OpenAI fast path (openai_fast.go) is built
// from. Every function here is at least as strict as fastjson, the parser of the full path: a
// value it accepts is one fastjson accepts too and reads the same way, and whatever it is not
// sure of it refuses (ok false), so that the caller falls back to fastjson. Positions are
// indexes into the event; none of these functions allocates.

// scanMaxDepth bounds the nesting skipValue walks through (fastjson allows 300). Deeper values
// are refused, which keeps the recursion short; chunks nest about six levels deep.
const scanMaxDepth = 32

// span is a JSON string inside an event: the bytes between its quotes, and whether they hold a
// backslash (an escape sequence to decode before use).
type span struct {
	off, end int32
	esc      bool
}

// empty reports whether the string is absent or "". A non-empty raw string never decodes to an
// empty one, since every escape sequence decodes to at least one byte.
func (s span) empty() bool { return s.end <= s.off }

// isWS reports JSON white space, the four bytes fastjson skips.
func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// skipWS returns the index of the first non-space byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isWS(b[i]) {
		i++
	}
	return i
}

// scanString reads the string whose opening quote is at b[i] and returns it and the index after
// its closing quote. The closing quote is the first one not escaped by a backslash, as in
// fastjson, which does not otherwise validate the contents (control bytes, invalid UTF-8 and
// unknown escapes are kept); neither does this.
func scanString(b []byte, i int) (span, int, bool) {
	start := i + 1
	esc := false
	for j := start; j < len(b); {
		// Eight bytes at a time up to the first quote or backslash: strings are most of a chunk.
		for j+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[j:])
			if m := hasByte(x, '"') | hasByte(x, '\\'); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		if j >= len(b) {
			break
		}
		switch b[j] {
		case '"':
			return span{off: int32(start), end: int32(j), esc: esc}, j + 1, true
		case '\\':
			esc = true
			j += 2
		default:
			j++
		}
	}
	return span{}, 0, false
}

// hasByte returns a word whose lowest set bit is the high bit of the first (lowest-addressed)
// byte of x equal to c, or 0 when there is none. Bits above the first match may be spurious
// (the subtraction borrows), which is why only the lowest one is used.
func hasByte(x uint64, c byte) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	y := x ^ (lo * uint64(c))
	return (y - lo) &^ y & hi
}

// scanKey reads an object key at b[i] and the colon after it, and returns the key and the index
// of the value. A key with a backslash is refused: fastjson matches keys after decoding them,
// and the fast path compares raw bytes.
func scanKey(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	// Keys are short: a byte loop beats the word-at-a-time one of scanString here.
	start, j := i+1, i+1
	for j < len(b) && b[j] != '"' && b[j] != '\\' {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return nil, 0, false
	}
	key := b[start:j]
	j = skipWS(b, j+1)
	if j >= len(b) || b[j] != ':' {
		return nil, 0, false
	}
	j = skipWS(b, j+1)
	if j >= len(b) {
		return nil, 0, false
	}
	return key, j, true
}

// scanNext reads what follows a member or element: a comma (more is true, and the index is that
// of the next key or element) or the closing bracket close.
func scanNext(b []byte, i int, close byte) (next int, more, ok bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, false, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), true, true
	case close:
		return i + 1, false, true
	}
	return 0, false, false
}

// scanOpen steps past the opening bracket at b[i] and reports whether the container is empty,
// in which case the index is past its closing bracket.
func scanOpen(b []byte, i int, close byte) (next int, empty bool) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, true
	}
	return i, false
}

// numberEnd returns the end of the number at b[i], which starts with a digit or '-'. fastjson
// takes any run of digits, '.', '-', '+', 'e' and 'E' as a number (reading it later, best
// effort), except a lone sign; the fast path accepts exactly that when it only skips a number.
func numberEnd(b []byte, i int) (int, bool) {
	j := i
	for j < len(b) {
		c := b[j]
		if c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	if j-i == 1 && b[i] == '-' {
		return 0, false
	}
	return j, true
}

// scanCount reads a number that the decoder uses (a choice index, a token count). Only plain
// non-negative integers of at most 15 digits without leading zeros are accepted: fastjson reads
// those exactly (below 2^53), and anything else (floats, signs, exponents, garbage fastjson
// reads best effort) is refused.
func scanCount(b []byte, i int) (int64, int, bool) {
	j, ok := numberEnd(b, i)
	if !ok || j-i > 15 || (b[i] == '0' && j-i > 1) {
		return 0, 0, false
	}
	var n int64
	for _, c := range b[i:j] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, j, true
}

// scanLiteral reads lit (true, false or null) at b[i].
func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// isNumberStart reports whether c starts a number the fast path reads (fastjson also takes '+',
// '.', "nan" and "inf", which are refused).
func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

// skipValue validates and steps over the value at b[i], at nesting depth depth.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		_, j, ok := scanString(b, i)
		return j, ok
	case c == '{':
		return skipObject(b, i, depth)
	case c == '[':
		return skipArray(b, i, depth)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	case isNumberStart(c):
		return numberEnd(b, i)
	}
	return 0, false
}

// skipObject steps over the object at b[i]. Keys may hold escapes here: they are not compared.
func skipObject(b []byte, i, depth int) (int, bool) {
	if depth >= scanMaxDepth {
		return 0, false
	}
	i, empty := scanOpen(b, i, '}')
	if empty {
		return i, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		_, j, ok := scanString(b, i)
		if !ok {
			return 0, false
		}
		j = skipWS(b, j)
		if j >= len(b) || b[j] != ':' {
			return 0, false
		}
		if i, ok = skipValue(b, skipWS(b, j+1), depth+1); !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, i, '}'); !ok || !more {
			return i, ok
		}
	}
}

// skipArray steps over the array at b[i].
func skipArray(b []byte, i, depth int) (int, bool) {
	if depth >= scanMaxDepth {
		return 0, false
	}
	i, empty := scanOpen(b, i, ']')
	if empty {
		return i, true
	}
	for {
		var ok, more bool
		if i, ok = skipValue(b, i, depth+1); !ok {
			return 0, false
		}
		if i, more, ok = scanNext(b, i, ']'); !ok || !more {
			return i, ok
		}
	}
}

// appendUnescaped appends the decoded form of the raw JSON string s to dst. It is fastjson's
// unescapeStringBestEffort, rewritten to append instead of decoding in place and without
// strconv (whose errors allocate): invalid and unknown escapes, a lone surrogate and an
// unpaired \u are kept as they are, and an invalid surrogate pair becomes U+FFFD.
func appendUnescaped(dst, s []byte) []byte {
	n := bytes.IndexByte(s, '\\')
	if n < 0 {
		return append(dst, s...)
	}
	dst = append(dst, s[:n]...)
	s = s[n+1:]
	for len(s) > 0 {
		ch := s[0]
		s = s[1:]
		switch ch {
		case '"', '\\', '/':
			dst = append(dst, ch)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			x, ok := hex4(s)
			if !ok {
				dst = append(dst, `\u`...)
				break
			}
			xs := s[:4]
			s = s[4:]
			if !utf16.IsSurrogate(rune(x)) {
				dst = utf8.AppendRune(dst, rune(x))
				break
			}
			var x1 rune
			if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				x1, ok = hex4(s[2:])
			} else {
				ok = false
			}
			if !ok {
				dst = append(dst, `\u`...)
				dst = append(dst, xs...)
				break
			}
			dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(x), x1))
			s = s[6:]
		default:
			dst = append(dst, '\\', ch)
		}
		n = bytes.IndexByte(s, '\\')
		if n < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(dst, s[:n]...)
		s = s[n+1:]
	}
	return dst
}

// hex4 reads the four hex digits at the start of s, as strconv.ParseUint(s[:4], 16, 16) does.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var x rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			x = x<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			x = x<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			x = x<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return x, true
}
