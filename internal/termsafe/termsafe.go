// Package termsafe neutralises text before it reaches a terminal. Text a client chose (a model
// name, a tenant, a path, an upstream's error message) can carry control characters: ESC
// sequences set the terminal's title, clear the screen, move the cursor or rewrite what was
// printed. Every console printer of the CLI writes through Writer, or escapes the text it
// embeds with String or Text, so that no C0 control (U+0000–U+001F), DEL (U+007F), C1 control
// (U+0080–U+009F) or stray byte of invalid UTF-8 (a raw 0x9B is CSI on 8-bit terminals)
// reaches the terminal as such: each is written as a visible escape, \u001b for a character
// (also valid inside a JSON string, meaning the same character) and \xNN for an invalid byte.
// The HTML surfaces escape their own way (html/template).
package termsafe

import (
	"io"
	"strings"
	"unicode/utf8"
)

// String returns s with every control character escaped, newlines and tabs included: for one
// field (a table cell, a name) that must stay on its line.
func String(s string) string { return escape(s, false) }

// Text returns s with every control character escaped except newline and tab: for a block of
// text the program laid out in lines.
func Text(s string) string { return escape(s, true) }

// Safe reports whether s needs no escaping for a terminal (keeping newlines and tabs).
func Safe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if control(rune(c), true) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || control(r, true) {
			return false
		}
		i += n
	}
	return true
}

func control(r rune, keepLines bool) bool {
	switch {
	case keepLines && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	}
	return false
}

const hex = "0123456789abcdef"

func escape(s string, keepLines bool) string {
	if keepLines && Safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case control(r, keepLines):
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer returns a writer that writes to w what it is given with Text's escaping. A multi-byte
// character split across two writes is escaped as invalid bytes (never passed through). Write
// reports len(p) when w took all of the escaped text.
func Writer(w io.Writer) io.Writer {
	if _, ok := w.(writer); ok {
		return w
	}
	return writer{w}
}

type writer struct{ w io.Writer }

func (t writer) Write(p []byte) (int, error) {
	s := string(p)
	if Safe(s) {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, Text(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}
