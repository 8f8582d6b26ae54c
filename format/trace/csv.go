package trace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// splitCSV splits one CSV line into fields, appending to dst. Fields may be quoted with
// double quotes ("" inside stands for one quote); a quoted field cannot span lines, which no
// trace format needs. Unquoted fields are sub-slices of line; quoted ones with escapes are
// copies.
func splitCSV(dst [][]byte, line []byte) ([][]byte, error) {
	dst = dst[:0]
	for {
		if len(line) > 0 && line[0] == '"' {
			field, rest, err := quoted(line)
			if err != nil {
				return dst, err
			}
			dst = append(dst, field)
			if len(rest) == 0 {
				return dst, nil
			}
			line = rest[1:] // rest starts with the comma
			continue
		}
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return append(dst, line), nil
		}
		dst = append(dst, line[:i])
		line = line[i+1:]
	}
}

// quoted reads a quoted field at the start of line and returns it unescaped and what follows
// (empty, or starting with a comma).
func quoted(line []byte) (field, rest []byte, err error) {
	escaped := false
	for j := 1; j < len(line); j++ {
		if line[j] != '"' {
			continue
		}
		if j+1 < len(line) && line[j+1] == '"' {
			escaped = true
			j++
			continue
		}
		field, rest = line[1:j], line[j+1:]
		if len(rest) > 0 && rest[0] != ',' {
			return nil, nil, fmt.Errorf("text after a closing quote: %q", truncate(rest, 20))
		}
		if escaped {
			field = bytes.ReplaceAll(field, []byte(`""`), []byte(`"`))
		}
		return field, rest, nil
	}
	return nil, nil, errors.New("unterminated quoted field")
}

// header maps lower-cased, trimmed column names to their positions; it also keeps the
// original spelling for error messages.
type header struct {
	pos   map[string]int
	names []string
}

func columnIndex(cols [][]byte) header {
	h := header{pos: make(map[string]int, len(cols))}
	for i, c := range cols {
		name := strings.TrimSpace(string(c))
		h.names = append(h.names, name)
		key := strings.ToLower(name)
		if _, dup := h.pos[key]; !dup {
			h.pos[key] = i
		}
	}
	return h
}

func (h header) has(key string) bool { _, ok := h.pos[key]; return ok }

// require returns the positions of the named columns (matched case-insensitively) or an error
// naming every one that is missing.
func (h header) require(names ...string) ([]int, error) {
	idx := make([]int, len(names))
	var missing []string
	for i, n := range names {
		p, ok := h.pos[strings.ToLower(n)]
		if !ok {
			missing = append(missing, fmt.Sprintf("%q", n))
		}
		idx[i] = p
	}
	if missing != nil {
		return nil, fmt.Errorf("header lacks column %s (header: %s)", strings.Join(missing, ", "), strings.Join(h.names, ","))
	}
	return idx, nil
}

// optional returns the position of a column, or -1.
func (h header) optional(name string) int {
	if p, ok := h.pos[strings.ToLower(name)]; ok {
		return p
	}
	return -1
}

// csvRow is the shared part of the CSV decoders: it splits a line and checks it is wide
// enough for the highest column they read.
type csvRow struct {
	fields [][]byte
	width  int // number of header columns
	need   int // highest column index read, plus one
}

func (c *csvRow) split(line []byte) error {
	var err error
	c.fields, err = splitCSV(c.fields, line)
	if err != nil {
		return err
	}
	if len(c.fields) < c.need {
		return fmt.Errorf("row has %d fields, header has %d", len(c.fields), c.width)
	}
	return nil
}
