package inject

import (
	"bytes"
	"encoding/json"
)

// The scanner below walks JSON that fastjson has already validated, so it only needs to find
// where values start and end; it never has to report a syntax error. Knowing the byte offsets
// of a member lets AddIncludeUsage change the one value it must change and copy every other
// byte of the request as the client wrote it (number spellings, escapes, key order, spacing),
// which re-encoding the document would not.

// member is one member of a JSON object: its key as written (quotes and escapes included) and
// the byte range of its value.
type member struct {
	key              []byte
	valStart, valEnd int
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first non-whitespace byte of b at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts with the quote at b[i].
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // a number or a literal
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		return j
	}
}

// members returns the members of the object whose '{' is at b[open], in order.
func members(b []byte, open int) []member {
	var out []member
	i := skipSpace(b, open+1)
	if i >= len(b) || b[i] == '}' {
		return nil
	}
	for i < len(b) && b[i] == '"' {
		ke := skipString(b, i)
		key := b[i:ke]
		i = skipSpace(b, ke) + 1 // past ':'
		vs := skipSpace(b, i)
		ve := skipValue(b, vs)
		out = append(out, member{key: key, valStart: vs, valEnd: ve})
		i = skipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			break
		}
		i = skipSpace(b, i+1)
	}
	return out
}

// keyIs reports whether the quoted key raw names name. Keys are compared decoded, so
// "stream\u005foptions" is stream_options, as it is to the server.
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == name
}

// find returns the members of ms named name.
func find(ms []member, name string) (found member, n int) {
	for _, m := range ms {
		if keyIs(m.key, name) {
			found, n = m, n+1
		}
	}
	return found, n
}
