package framing

import "bytes"

// NDJSONStats counts what an NDJSON splitter has seen since it was made or last Reset.
type NDJSONStats struct {
	// Events is the number of lines dispatched, oversized ones included.
	Events int64
	// Oversized is the number of dispatched lines longer than the limit.
	Oversized int64
	// Blank is the number of empty or whitespace-only lines skipped.
	Blank int64
	// Bytes is the number of bytes written.
	Bytes int64
}

// NDJSON splits a newline-delimited JSON stream into lines as it passes. Lines end in "\n"; a
// "\r" before it is stripped; lines that are empty or hold only JSON whitespace (space, tab, CR)
// are skipped. A line longer than the limit is not buffered: it is scanned to its end and
// dispatched with Oversized set and empty Data, so that it can be counted. A final line without
// a newline is dispatched by Close.
//
// Event.At is the time of the Write that carried the line's first byte, and Event.Size the
// line's bytes including its newline. The splitter does not parse the JSON.
//
// In steady state the splitter does not allocate. A line that lies whole in one Write is passed
// to the callback as a slice of that Write's p, without a copy; a line that spans writes is
// gathered in the splitter's buffer. Either way Data is valid only during the callback.
//
// An NDJSON is not safe for concurrent use, and the callback must not call back into it.
type NDJSON struct {
	fn  func(*Event)
	max int
	ev  Event

	// A line that a Write ended in the middle of.
	buf      []byte // its bytes, while it fits in max+1 (room for a "\r" to strip)
	partial  bool   // a line is in progress
	over     bool   // it outgrew the limit: buf is dropped
	nonBlank bool   // once over: a byte other than whitespace was seen
	at       int64  // time of the Write that carried its first byte
	size     int    // its bytes so far

	closed bool
	stats  NDJSONStats
}

// NewNDJSON returns a splitter that calls fn for every non-blank line, with lines limited to
// maxLine bytes without their terminator (DefaultMaxEvent when maxLine <= 0). The Event passed
// to fn is reused and valid only during the call. A nil fn only counts lines.
func NewNDJSON(maxLine int, fn func(*Event)) *NDJSON {
	return &NDJSON{fn: fn, max: limitOrDefault(maxLine)}
}

// Write feeds the next bytes of the stream, read at time at, and dispatches every line they
// complete. It keeps no reference to p after it returns. Writes after Close are ignored.
func (s *NDJSON) Write(p []byte, at int64) {
	if s.closed {
		return
	}
	s.stats.Bytes += int64(len(p))
	i := 0
	if s.partial {
		j := bytes.IndexByte(p, '\n')
		if j < 0 {
			s.carry(p)
			return
		}
		s.carry(p[:j])
		s.size++
		s.endCarried()
		i = j + 1
	}
	for i < len(p) {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			s.partial, s.over, s.nonBlank = true, false, false
			s.at, s.size = at, 0
			s.buf = s.buf[:0]
			s.carry(p[i:])
			return
		}
		s.line(p[i:i+j], at, j+1)
		i += j + 1
	}
}

// carry adds the next piece of a line that spans writes.
func (s *NDJSON) carry(b []byte) {
	s.size += len(b)
	if s.over {
		if !s.nonBlank {
			s.nonBlank = !isBlank(b)
		}
		return
	}
	if len(s.buf)+len(b) > s.max+1 {
		s.over = true
		s.nonBlank = !isBlank(s.buf) || !isBlank(b)
		s.buf = s.buf[:0]
		return
	}
	s.buf = appendBounded(s.buf, b, s.max+1)
}

// endCarried finishes the line that spanned writes, and reports whether it was dispatched.
func (s *NDJSON) endCarried() bool {
	s.partial = false
	if !s.over {
		return s.line(s.buf, s.at, s.size)
	}
	if !s.nonBlank {
		s.stats.Blank++
		return false
	}
	s.dispatch(nil, s.at, s.size, true)
	return true
}

// line handles one whole line, terminator excluded, and reports whether it was dispatched.
func (s *NDJSON) line(l []byte, at int64, size int) bool {
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	if isBlank(l) {
		s.stats.Blank++
		return false
	}
	if len(l) > s.max {
		s.dispatch(nil, at, size, true)
		return true
	}
	s.dispatch(l, at, size, false)
	return true
}

// dispatch calls fn with one line.
func (s *NDJSON) dispatch(data []byte, at int64, size int, over bool) {
	s.stats.Events++
	if over {
		s.stats.Oversized++
	}
	if s.fn == nil {
		return
	}
	ev := &s.ev
	ev.Data, ev.At, ev.Size, ev.Oversized = data, at, size, over
	s.fn(ev)
	// Drop the reference so that the splitter does not keep the caller's slice alive.
	ev.Data = nil
}

// isBlank reports whether b holds only JSON whitespace other than "\n". It stops at the first
// other byte, which for a JSON line is its first.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Close ends the stream. A final line without a newline is dispatched, and Close reports
// whether there was one (a non-blank one: trailing whitespace is not a truncated line). Close is
// idempotent.
func (s *NDJSON) Close() (truncated bool) {
	if s.closed {
		return false
	}
	s.closed = true
	if !s.partial {
		return false
	}
	return s.endCarried()
}

// Reset makes the splitter ready for a new stream, keeping its buffer, and clears its
// statistics.
func (s *NDJSON) Reset() {
	*s = NDJSON{fn: s.fn, max: s.max, buf: s.buf[:0]}
}

// Stats returns what the splitter has counted since it was made or last Reset.
func (s *NDJSON) Stats() NDJSONStats { return s.stats }

// Interface guard.
var _ Framer = (*NDJSON)(nil)
