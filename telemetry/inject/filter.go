package inject

import (
	"bytes"
	"io"

	"github.com/valyala/fastjson"
)

// Filter passes an SSE stream to w without its usage-only chunks (see IsUsageOnly). It is
// what a client that did not ask for usage must see of a response to a request that
// AddIncludeUsage changed.
//
// To decide whether an event is a usage-only chunk the filter needs the whole event, so the
// bytes of an event that is not complete at the end of a Write are held until a later Write
// completes it. Servers write whole events (one or several per write), so in practice nothing is
// held and every Write produces one write to w at once, with the same bytes less any usage-only
// chunk; and an SSE client acts on an event only once it is complete, so holding a partial one
// does not delay what the client does. An event longer than max bytes is passed on unfiltered
// and switches the filter off for the rest of the stream (an OpenAI stream has no such events;
// the worst outcome is that the client sees a usage chunk): the filter never holds more than
// max bytes.
//
// A Filter is not safe for concurrent use.
type Filter struct {
	w       io.Writer
	max     int
	pending []byte // the start of an incomplete event
	scratch []byte // kept bytes, when an event was removed from a write
	data    []byte // an event's data lines joined, when it has several
	off     bool   // an oversized event passed: everything passes unchanged
	keepLen bool   // a removed event is replaced by a comment of its length (KeepLength)
	removed int
	p       fastjson.Parser
}

// NewFilter returns a filter that writes to w and holds at most max bytes of an incomplete
// event (max <= 0 means 1 MiB).
func NewFilter(w io.Writer, max int) *Filter {
	if max <= 0 {
		max = 1 << 20
	}
	return &Filter{w: w, max: max}
}

// KeepLength makes the filter replace each usage-only chunk by an SSE comment of the same
// length (":" and spaces, ended by a blank line) instead of removing it, so that a response
// framed by a Content-Length keeps its length: an SSE client ignores comments (WHATWG HTML,
// server-sent events: a line starting with a colon), so it reads the same events as without
// the chunk. Call it before the first Write.
func (f *Filter) KeepLength() { f.keepLen = true }

// Held is the number of bytes of an incomplete event the filter holds, which Close writes.
func (f *Filter) Held() int { return len(f.pending) }

// Removed is the number of usage-only chunks removed so far.
func (f *Filter) Removed() int { return f.removed }

// Write filters p. It reports len(p) once the complete events of p (and of what it held) have
// been written to w, less any usage-only chunk; when w fails it returns w's error and 0.
func (f *Filter) Write(p []byte) (int, error) {
	if f.off {
		return f.w.Write(p)
	}
	buf := p
	if len(f.pending) > 0 {
		f.pending = append(f.pending, p...)
		buf = f.pending
	}
	kept, end := f.complete(buf)
	if len(kept) > 0 {
		if _, err := f.w.Write(kept); err != nil {
			f.pending = f.pending[:0]
			return 0, err
		}
	}
	rest := buf[end:]
	if len(rest) > f.max {
		f.off = true
		f.pending = f.pending[:0]
		if _, err := f.w.Write(rest); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if len(f.pending) > 0 {
		// rest is the end of pending: move it to the front (copy handles the overlap).
		f.pending = f.pending[:copy(f.pending, rest)]
	} else {
		f.pending = append(f.pending, rest...)
	}
	return len(p), nil
}

// Close writes what is held of an incomplete event (a stream cut inside an event), so the
// client gets every byte it would have got. It does not close w.
func (f *Filter) Close() error {
	if len(f.pending) == 0 {
		return nil
	}
	_, err := f.w.Write(f.pending)
	f.pending = f.pending[:0]
	return err
}

// complete splits the complete events at the start of buf and returns the bytes to pass on
// (buf[:end] itself when no event was removed) and where the incomplete rest starts.
func (f *Filter) complete(buf []byte) (kept []byte, end int) {
	copied := false
	for end < len(buf) {
		n := eventEnd(buf[end:])
		if n < 0 {
			break
		}
		ev := buf[end : end+n]
		if f.usageOnly(ev) {
			f.removed++
			if !copied {
				f.scratch = append(f.scratch[:0], buf[:end]...)
				copied = true
			}
			if f.keepLen {
				f.scratch = appendComment(f.scratch, len(ev))
			}
		} else if copied {
			f.scratch = append(f.scratch, ev...)
		}
		end += n
	}
	if copied {
		return f.scratch, end
	}
	return buf[:end], end
}

// usageOnly reports whether the complete event ev is a usage-only chunk. Only unnamed (or
// "message") events with data are considered, as OpenAI's streams have.
func (f *Filter) usageOnly(ev []byte) bool {
	if !bytes.Contains(ev, []byte(`"usage"`)) {
		return false
	}
	var data []byte
	lines := 0
	for len(ev) > 0 {
		line := ev
		next := len(ev)
		if i := bytes.IndexAny(ev, "\r\n"); i >= 0 {
			line, next = ev[:i], i+1
			if ev[i] == '\r' && i+1 < len(ev) && ev[i+1] == '\n' {
				next++
			}
		}
		ev = ev[next:]
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			lines++
			if lines == 1 {
				data = value
				continue
			}
			if lines == 2 {
				f.data = append(f.data[:0], data...)
			}
			f.data = append(append(f.data, '\n'), value...)
			data = f.data
		case "event":
			if string(value) != "message" {
				return false
			}
		}
	}
	return lines > 0 && IsUsageOnly(&f.p, data)
}

// eventEnd returns the length of the first complete event of b, its terminating blank line
// included, or -1 when b holds no blank line. Lines end with "\n", "\r\n" or "\r".
func eventEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			if i+1 < len(b) && b[i+1] == '\n' {
				return i + 2
			}
			if i+2 < len(b) && b[i+1] == '\r' {
				if b[i+2] == '\n' {
					return i + 3
				}
				return i + 2 // "\n" then a blank line ended by a lone "\r"
			}
		case '\r':
			if i+1 < len(b) && b[i+1] == '\r' {
				return i + 2
			}
		}
	}
	return -1
}

// appendComment appends an SSE comment of exactly n bytes (n >= 3; a usage-only event is
// always longer): ":", spaces, then a line end and a blank line, which dispatch no event.
func appendComment(b []byte, n int) []byte {
	b = append(b, ':')
	for range n - 3 {
		b = append(b, ' ')
	}
	return append(b, '\n', '\n')
}
