package framing

import "bytes"

// This file holds the byte-stream path of the SSE parser: a line that one Write ends in the
// middle of is interpreted piece by piece as its bytes arrive, instead of being buffered whole.
// The field name is held in a 5-byte array, data goes straight into the data buffer and other
// values into a small bounded buffer, so a line longer than any limit costs no more memory than
// a short one. Once the line ends it has had exactly the effect fullLine would have given it.

// lineState is where the parser is inside a line that spans writes.
type lineState uint8

const (
	// lineNone: between lines; the next byte starts a new line.
	lineNone lineState = iota
	// lineName: in the field name of a non-comment line; name holds it so far.
	lineName
	// lineValue: in the value of the known field fld.
	lineValue
	// lineSkip: in a comment or an ignored field; the bytes are counted and dropped.
	lineSkip
)

// field is a field name the parser acts on.
type field uint8

const (
	fieldUnknown field = iota
	fieldData
	fieldEvent
	fieldID
	fieldRetry
)

// fieldOf returns the field named name. The switch on string(name) does not allocate.
func fieldOf(name []byte) field {
	switch string(name) {
	case "data":
		return fieldData
	case "event":
		return fieldEvent
	case "id":
		return fieldID
	case "retry":
		return fieldRetry
	}
	return fieldUnknown
}

// startLine begins a line that the current Write (time at) does not finish; b is not empty.
func (s *SSE) startLine(b []byte, at int64) {
	if b[0] == ':' {
		s.stats.Comments++
		s.line = lineSkip
		s.size += len(b)
		return
	}
	if !s.started {
		s.started = true
		s.at = at
	}
	s.line = lineName
	s.nameLen = 0
	s.feed(b)
}

// feed interprets the next bytes of the current line, which contain no line end.
func (s *SSE) feed(b []byte) {
	s.size += len(b)
	if s.line == lineName {
		c := bytes.IndexByte(b, ':')
		n := c
		if c < 0 {
			n = len(b)
		}
		if s.nameLen+n > len(s.name) {
			// Longer than every known field name: an unknown field, ignored.
			s.line = lineSkip
			return
		}
		s.nameLen += copy(s.name[s.nameLen:], b[:n])
		if c < 0 {
			return
		}
		s.beginValue(fieldOf(s.name[:s.nameLen]))
		b = b[c+1:]
	}
	if s.line != lineValue || len(b) == 0 {
		return
	}
	if s.strip {
		s.strip = false
		if b[0] == ' ' {
			b = b[1:]
		}
	}
	if s.fld == fieldData {
		s.moreData(b)
		return
	}
	if s.valLong {
		return
	}
	if len(s.tmp)+len(b) > s.maxField {
		s.valLong = true
		return
	}
	s.tmp = appendBounded(s.tmp, b, s.maxField)
}

// beginValue is called at the colon of a field whose value will arrive through feed.
func (s *SSE) beginValue(f field) {
	switch f {
	case fieldUnknown:
		s.line = lineSkip
		return
	case fieldData:
		s.beginData()
	default:
		s.tmp = s.tmp[:0]
		s.valLong = false
	}
	s.fld = f
	s.line = lineValue
	s.strip = true
}

// beginData starts a data line: it adds the "\n" that joins it to an earlier data line.
func (s *SSE) beginData() {
	if s.over {
		s.hasData = true
		return
	}
	s.unalias()
	if s.hasData {
		if len(s.dataBuf)+1 > s.max {
			s.markOver()
			return
		}
		s.dataBuf = appendBounded(s.dataBuf, newline, s.max)
	}
	s.hasData = true
}

// moreData appends the next piece of a data line's value, dropping the event's data once it
// would exceed the limit.
func (s *SSE) moreData(b []byte) {
	if s.over {
		return
	}
	if len(s.dataBuf)+len(b) > s.max {
		s.markOver()
		return
	}
	s.dataBuf = appendBounded(s.dataBuf, b, s.max)
}

// endLine is called at the line end of a line that spanned writes, and applies the field.
func (s *SSE) endLine() {
	s.size++
	switch s.line {
	case lineName:
		// No colon: the whole line is the field name and the value is empty.
		s.setField(fieldOf(s.name[:s.nameLen]), nil)
	case lineValue:
		switch {
		case s.fld == fieldData:
			// Already appended piece by piece.
		case s.valLong:
			// Same outcome as setField with a value over maxField.
			if s.fld == fieldEvent {
				s.typ = s.typ[:0]
				s.markOver()
			}
		default:
			s.setField(s.fld, s.tmp)
		}
	}
	s.line = lineNone
}
