package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes bounds one line of a trace file. Payload lines carry whole request bodies
// (long conversations, images as data URLs), so the bound is generous; it exists so a file
// without newlines cannot make the reader buffer it whole.
const DefaultMaxLineBytes = 64 << 20

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// lineReader splits a file into lines, counting them, dropping a leading UTF-8 byte-order mark
// and the "\r" of CRLF endings, and telling whether each line ended with a newline (the last
// line of a file torn by a crash does not).
type lineReader struct {
	br   *bufio.Reader
	long []byte // holds a line longer than br's buffer
	max  int
	line int // number of the line last returned
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its terminator. The slice is valid until the next call.
// At the end of input it returns io.EOF.
func (l *lineReader) next() (line []byte, terminated bool, err error) {
	b, err := l.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.long = append(l.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(l.long) > l.max {
				l.line++
				return nil, false, fmt.Errorf("line longer than %d bytes", l.max)
			}
			b, err = l.br.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if len(b) == 0 {
		return nil, false, io.EOF
	}
	if len(b) > l.max {
		l.line++
		return nil, false, fmt.Errorf("line longer than %d bytes", l.max)
	}
	l.line++
	if l.line == 1 {
		b = bytes.TrimPrefix(b, utf8BOM)
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		terminated = true
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, terminated, nil
}

// blank reports whether a line holds nothing but spaces and tabs.
func blank(b []byte) bool { return len(bytes.Trim(b, " \t")) == 0 }

// EachLine calls fn with every line of r, without its line end (and a leading UTF-8 BOM),
// numbered from 1, with whether it ended in a newline (a last line without one was cut off
// while being written). A line longer than max bytes (DefaultMaxLineBytes when 0) stops it with
// an error naming the line, as does an error fn returns.
func EachLine(r io.Reader, max int, fn func(n int, line []byte, terminated bool) error) error {
	lr := newLineReader(r, max)
	for {
		line, terminated, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", lr.line, err)
		}
		if err := fn(lr.line, line, terminated); err != nil {
			return err
		}
	}
}

// Lines reads r line by line as EachLine does, one line per call of Next, for readers that
// pull lines from several files in turn (a merge).
type Lines struct{ lr *lineReader }

// NewLines returns a Lines of r; a line longer than max bytes (DefaultMaxLineBytes when 0) is
// an error.
func NewLines(r io.Reader, max int) *Lines { return &Lines{lr: newLineReader(r, max)} }

// Next returns the next line without its line end (valid until the next call), its number from
// 1 and whether it ended in a newline; io.EOF after the last. Other errors name the line.
func (l *Lines) Next() (n int, line []byte, terminated bool, err error) {
	line, terminated, err = l.lr.next()
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("line %d: %w", l.lr.line, err)
	}
	return l.lr.line, line, terminated, err
}
