package decode

// maxRepairDepth bounds the nesting closeTruncated tracks; deeper bodies are not repaired. Chat
// requests nest about five levels (body, messages, message, content parts, part).
const maxRepairDepth = 64

// closeTruncated turns a JSON object that was cut short (a request body of which the caller
// captured only the first N bytes) into valid JSON holding everything that arrived whole, and
// appends it to dst. ok is false when body does not look cut: it does not start with '{', its
// brackets all closed (then it is invalid for another reason), or it nests too deep.
//
// The prefix is cut back to the last point where a value ended (after a string, '}' or ']', or
// before a ',') or a container opened, and the containers still open are closed. A number or
// literal at the cut is dropped, since "12" may be the start of "128". A string value still open
// at the cut is kept and closed only when it belongs to a key that holds prompt text ("content",
// "text", "prompt"): a long prompt is the usual reason a body is cut, and its start is worth
// counting, while a cut model name would be wrong rather than short. An escape sequence or
// UTF-8 character or UTF-16 surrogate pair cut in half is dropped.
func closeTruncated(dst, body []byte) (_ []byte, ok bool) {
	i0 := 0
	for i0 < len(body) && isWS(body[i0]) {
		i0++
	}
	if i0 == len(body) || body[i0] != '{' {
		return dst, false
	}
	var stack [maxRepairDepth]byte
	depth := 0
	safe := 0 // body[:safe] ends at a value boundary
	expectKey := false
	var inStr, isKey, esc bool
	uRemain, escAt, strStart := 0, 0, 0
	hiAt, hiEnd := 0, -1 // the last \uD800-\uDBFF escape, whose pair may be cut off
	var lastKey []byte
	for i := i0; i < len(body); i++ {
		c := body[i]
		if inStr {
			switch {
			case uRemain > 0:
				uRemain--
				if uRemain == 0 && isHighSurrogate(body[escAt+2:i+1]) {
					hiAt, hiEnd = escAt, i+1
				}
			case esc:
				esc = false
				if c == 'u' {
					uRemain = 4
				}
			case c == '\\':
				esc, escAt = true, i
			case c == '"':
				inStr = false
				if isKey {
					lastKey = body[strStart:i]
				} else {
					safe = i + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr, strStart = true, i+1
			isKey = expectKey && stack[depth-1] == '{'
		case '{', '[':
			if depth == maxRepairDepth {
				return dst, false
			}
			stack[depth] = c
			depth++
			expectKey = c == '{'
			safe = i + 1
		case '}', ']':
			if depth == 0 || stack[depth-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return dst, false
			}
			depth--
			if depth == 0 {
				return dst, false
			}
			expectKey = false
			safe = i + 1
		case ',':
			if depth == 0 {
				return dst, false
			}
			safe = i
			expectKey = stack[depth-1] == '{'
		case ':':
			expectKey = false
		}
	}
	if inStr && !isKey && promptKey(lastKey) {
		end := len(body)
		if esc || uRemain > 0 {
			end = escAt
		}
		if hiEnd == end {
			end = hiAt
		}
		dst = append(dst, body[:strStart]...)
		dst = append(dst, trimPartialRune(body[strStart:end])...)
		dst = append(dst, '"')
	} else {
		dst = append(dst, body[:safe]...)
	}
	for depth > 0 {
		depth--
		dst = append(dst, stack[depth]+2)
	}
	return dst, true
}

// isHighSurrogate reports whether the four hex digits h name a UTF-16 high surrogate, the first
// half of a \uXXXX\uXXXX pair.
func isHighSurrogate(h []byte) bool {
	return len(h) == 4 && (h[0] == 'd' || h[0] == 'D') &&
		(h[1] == '8' || h[1] == '9' || h[1] == 'a' || h[1] == 'A' || h[1] == 'b' || h[1] == 'B')
}

// promptKey reports whether a string under key k holds prompt text worth keeping when cut.
func promptKey(k []byte) bool {
	switch string(k) {
	case "content", "text", "prompt":
		return true
	}
	return false
}
