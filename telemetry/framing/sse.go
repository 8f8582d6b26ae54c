package framing

import "bytes"

// maxFieldLen bounds the value of an SSE "event", "id" or "retry" field. Real streams use a few
// bytes; the bound only keeps a hostile stream from making the parser hold a second megabyte
// next to the data buffer.
const maxFieldLen = 4096

// SSEStats counts what an SSE parser has seen since it was made or last Reset.
type SSEStats struct {
	// Events is the number of events dispatched, oversized ones included.
	Events int64
	// Oversized is the number of dispatched events whose data exceeded the limit.
	Oversized int64
	// Comments is the number of comment lines (lines starting with ':'), which servers send as
	// keep-alives.
	Comments int64
	// Bytes is the number of bytes written, a stripped byte order mark included.
	Bytes int64
}

// SSE is an incremental Server-Sent Events parser following the WHATWG event-stream
// interpretation rules (https://html.spec.whatwg.org/multipage/server-sent-events.html):
//
//   - lines end in LF, CR LF or a lone CR, also when the CR and the LF arrive in different writes;
//   - a leading UTF-8 byte order mark is stripped once, also when it is split across writes;
//   - a line starting with ':' is a comment; a line without ':' is a field name with an empty
//     value; one space after the colon is stripped;
//   - data lines are joined with "\n"; "event" sets the type, "id" the last event ID (ignored
//     when it contains NUL), "retry" the reconnection time (ignored unless all ASCII digits);
//     other fields are ignored;
//   - a blank line dispatches the event, unless no data line was seen, in which case it only
//     resets the data and type (so comment-only keep-alive blocks are never dispatched);
//   - at the end of the stream an unterminated event is discarded.
//
// The parser works on bytes: it does not replace invalid UTF-8 with U+FFFD as a browser would.
//
// Event.At is the time of the Write that carried the first byte of the event's first non-comment
// line. Comments are excluded on purpose: a keep-alive comment sent seconds before the event it
// happens to precede says nothing about when the event was produced.
//
// Memory is bounded: the data of one event is limited to maxEvent bytes and the values of event,
// id and retry fields to 4 KiB, whatever the lengths of the lines that carry them. An event whose
// data would exceed the limit is still scanned to its end and dispatched with Oversized set and
// empty Data, so that it can be counted; an event type over the limit does the same, an id or
// retry value over it is ignored.
//
// In steady state the parser does not allocate. When an event's only data line sits whole in one
// Write, Event.Data points into the slice passed to that Write instead of being copied; otherwise
// it points into the parser's buffer. Either way it is valid only during the callback.
//
// An SSE is not safe for concurrent use, and the callback must not call back into the parser.
type SSE struct {
	fn       func(*Event)
	max      int // limit on one event's joined data
	maxField int // limit on an event, id or retry value
	ev       Event

	// The event being assembled, reset by every blank line.
	alias   []byte // the data while it is one line inside the current Write's slice
	aliased bool   // the data is alias rather than dataBuf
	dataBuf []byte // the data once it spans lines or writes
	hasData bool   // a data line was seen: the event will be dispatched
	over    bool   // the event exceeded a limit: its data is dropped
	started bool   // a non-comment line was seen, so at is set
	at      int64
	size    int
	typ     []byte

	// State that outlives one event.
	id       []byte
	retry    int64
	retrySet bool

	// A line that a Write ended in the middle of (see sse_line.go).
	line    lineState
	fld     field
	name    [5]byte // longest known field names are "event" and "retry"
	nameLen int
	strip   bool   // the next value byte is the value's first: drop it if it is a space
	valLong bool   // the value in tmp outgrew maxField
	tmp     []byte // an event, id or retry value being assembled
	skipLF  bool   // the last Write ended in CR: an LF starting the next one ends nothing

	bomN    int   // bytes of a leading byte order mark matched so far
	bomDone bool  // the stream start is past: no byte order mark will be stripped
	bomAt   int64 // time of the Write that carried the first matched byte order mark byte
	closed  bool
	stats   SSEStats
}

// utf8BOM is the byte order mark that a UTF-8 decoder strips from the start of a stream.
var utf8BOM = [3]byte{0xEF, 0xBB, 0xBF}

// NewSSE returns a parser that calls fn for every dispatched event, with the event's data limited
// to maxEvent bytes (DefaultMaxEvent when maxEvent <= 0). The Event passed to fn is reused by the
// parser and valid only during the call. A nil fn only counts events.
func NewSSE(maxEvent int, fn func(*Event)) *SSE {
	maxEvent = limitOrDefault(maxEvent)
	return &SSE{fn: fn, max: maxEvent, maxField: maxFieldLen}
}

// Write feeds the next bytes of the stream, read at time at, and dispatches every event they
// complete. It keeps no reference to p after it returns. Writes after Close are ignored.
func (s *SSE) Write(p []byte, at int64) {
	if s.closed {
		return
	}
	s.stats.Bytes += int64(len(p))
	if !s.bomDone {
		// Match the byte order mark byte by byte: it may arrive split across writes.
		for len(p) > 0 && s.bomN < len(utf8BOM) {
			if p[0] != utf8BOM[s.bomN] {
				s.bomDone = true
				// The bytes held back were not a byte order mark after all: they start the
				// first line, at the time they arrived.
				s.write(utf8BOM[:s.bomN], s.bomAt)
				break
			}
			if s.bomN == 0 {
				s.bomAt = at
			}
			s.bomN++
			p = p[1:]
		}
		if s.bomN == len(utf8BOM) {
			s.bomDone = true
		}
		if !s.bomDone {
			return
		}
	}
	s.write(p, at)
}

// write splits p into lines. Lines that p holds whole take the fast path (fullLine), which reads
// them in place; the rest of a line begun by an earlier Write, and the start of one that p ends
// in the middle of, go through the byte-stream path in sse_line.go.
func (s *SSE) write(p []byte, at int64) {
	i := 0
	if s.skipLF && len(p) > 0 {
		s.skipLF = false
		if p[0] == '\n' {
			s.size++
			i = 1
		}
	}
	// lf and cr cache the next LF and CR at or after i (len(p) for none), so that a stream of
	// lone-CR lines does not rescan the rest of p for an LF on every line.
	lf, cr := -1, -1
	for i < len(p) {
		if lf < i {
			lf = indexFrom(p, i, '\n')
		}
		if cr < i {
			cr = indexFrom(p, i, '\r')
		}
		e := min(lf, cr)
		if e == len(p) {
			// No line end: the line continues in a later Write.
			if s.line == lineNone {
				s.startLine(p[i:], at)
			} else {
				s.feed(p[i:])
			}
			break
		}
		if s.line == lineNone {
			s.fullLine(p[i:e], at)
		} else {
			s.feed(p[i:e])
			s.endLine()
		}
		i = e + 1
		if p[e] == '\r' {
			// A CR LF pair is one line end. The LF is counted after the line was handled, so
			// that Size does not depend on whether the LF came in the same Write.
			if i == len(p) {
				s.skipLF = true
			} else if p[i] == '\n' {
				s.size++
				i++
			}
		}
	}
	// p is the caller's: data that still points into it must be copied before returning.
	s.unalias()
}

// indexFrom returns the index of the first c in p at or after i, or len(p) when there is none.
func indexFrom(p []byte, i int, c byte) int {
	j := bytes.IndexByte(p[i:], c)
	if j < 0 {
		return len(p)
	}
	return i + j
}

// fullLine interprets one line that lies whole in the current Write, terminator excluded.
func (s *SSE) fullLine(l []byte, at int64) {
	s.size += len(l) + 1
	if len(l) == 0 {
		s.dispatch()
		return
	}
	if l[0] == ':' {
		s.stats.Comments++
		return
	}
	if !s.started {
		s.started = true
		s.at = at
	}
	name, val := l, []byte(nil)
	if c := bytes.IndexByte(l, ':'); c >= 0 {
		name, val = l[:c], l[c+1:]
		if len(val) > 0 && val[0] == ' ' {
			val = val[1:]
		}
	}
	s.setField(fieldOf(name), val)
}

// setField applies one field whose whole value is known.
func (s *SSE) setField(f field, val []byte) {
	switch f {
	case fieldData:
		s.appendData(val)
	case fieldEvent:
		s.typ = s.typ[:0]
		if len(val) > s.maxField {
			s.markOver()
			return
		}
		s.typ = appendBounded(s.typ, val, s.maxField)
	case fieldID:
		if len(val) <= s.maxField && bytes.IndexByte(val, 0) < 0 {
			s.id = appendBounded(s.id[:0], val, s.maxField)
		}
	case fieldRetry:
		if len(val) <= s.maxField {
			if ms, ok := parseRetry(val); ok {
				s.retry, s.retrySet = ms, true
			}
		}
	}
}

// appendData adds one whole data line. The first data line of an event is kept as a slice of
// the current Write (the common case of a one-line event costs no copy); a second line, or the
// end of the Write, moves the data into dataBuf.
func (s *SSE) appendData(val []byte) {
	if s.over {
		s.hasData = true
		return
	}
	if !s.hasData {
		s.hasData = true
		if len(val) > s.max {
			s.markOver()
			return
		}
		s.alias, s.aliased = val, true
		return
	}
	s.unalias()
	if len(s.dataBuf)+1+len(val) > s.max {
		s.markOver()
		return
	}
	s.dataBuf = appendBounded(s.dataBuf, newline, s.max)
	s.dataBuf = appendBounded(s.dataBuf, val, s.max)
}

// unalias copies data that points into the current Write's slice into dataBuf.
func (s *SSE) unalias() {
	if s.aliased {
		s.dataBuf = appendBounded(s.dataBuf[:0], s.alias, s.max)
		s.alias, s.aliased = nil, false
	}
}

// markOver marks the event as over a limit and drops its data.
func (s *SSE) markOver() {
	s.over = true
	s.alias, s.aliased = nil, false
	s.dataBuf = s.dataBuf[:0]
}

// dispatch ends the event at a blank line: it calls fn if a data line was seen, then resets the
// event whether or not it was dispatched. The last event ID and retry survive the reset.
func (s *SSE) dispatch() {
	if s.hasData {
		ev := &s.ev
		ev.Type, ev.ID, ev.At, ev.Size, ev.Oversized = s.typ, s.id, s.at, s.size, s.over
		ev.Data = s.dataBuf
		if s.aliased {
			ev.Data = s.alias
		}
		s.stats.Events++
		if s.over {
			s.stats.Oversized++
		}
		if s.fn != nil {
			s.fn(ev)
		}
		// Drop the reference so that the parser does not keep the caller's slice alive.
		ev.Data = nil
	}
	s.resetEvent()
}

// resetEvent clears the event being assembled, keeping its buffers.
func (s *SSE) resetEvent() {
	s.alias, s.aliased = nil, false
	s.dataBuf = s.dataBuf[:0]
	s.typ = s.typ[:0]
	s.hasData, s.over, s.started = false, false, false
	s.at, s.size = 0, 0
}

// Close ends the stream and reports whether it was cut inside an event: in the middle of a
// line, or after data lines without the blank line that would dispatch them. Per the WHATWG
// rules such an event is discarded, not dispatched. Close is idempotent.
func (s *SSE) Close() (truncated bool) {
	if s.closed {
		return false
	}
	s.closed = true
	truncated = s.line != lineNone || s.hasData || (!s.bomDone && s.bomN > 0)
	s.resetEvent()
	s.line = lineNone
	return truncated
}

// Reset makes the parser ready for a new stream, keeping its buffers: it clears the event, the
// last event ID, the retry value and the statistics.
func (s *SSE) Reset() {
	*s = SSE{
		fn: s.fn, max: s.max, maxField: s.maxField,
		dataBuf: s.dataBuf[:0], typ: s.typ[:0], id: s.id[:0], tmp: s.tmp[:0],
	}
}

// Stats returns what the parser has counted since it was made or last Reset.
func (s *SSE) Stats() SSEStats { return s.stats }

// Retry returns the reconnection time in milliseconds from the stream's last valid "retry"
// field, and whether there was one.
func (s *SSE) Retry() (ms int64, ok bool) { return s.retry, s.retrySet }

// parseRetry parses a retry value: one or more ASCII digits that fit in an int64.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Interface guard.
var _ Framer = (*SSE)(nil)
