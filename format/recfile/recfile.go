// Package recfile names llmtap's recording files: <kind>-<UTC start>[-<n>].<ext>, kind records,
// trace or payloads, ext .jsonl or .parquet. The recorder creates them (telemetry/recorder,
// format/parquetfile); `trace merge` reads a file's kind and start back from its name.
package recfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kinds of file, as they begin file names.
const (
	KindRecords  = "records"
	KindTrace    = "trace"
	KindPayloads = "payloads"
)

// Modes of recording files and of the folders made for them: recordings can hold prompts.
const (
	Mode    = 0o600
	DirMode = 0o700
)

// layout is the start time in file names: UTC, sortable, no characters that need quoting.
const layout = "20060102T150405.000Z"

var name = regexp.MustCompile(`^(trace|records|payloads)-(\d{8}T\d{6}\.\d{3}Z)(?:-(\d+))?\.(?:jsonl|parquet)$`)

// Name is the name of the file of kind starting at start: <kind>-<UTC start><ext>.
func Name(kind string, start time.Time, ext string) string {
	return kind + "-" + start.UTC().Format(layout) + ext
}

// Create creates a new file dir/<kind>-<start><ext> with mode 0600 in an existing folder, never
// reusing one: a suffix -1, -2 … is added when the name is taken (two rotations within a
// millisecond, two recorders in one folder across a reload).
func Create(dir, kind, ext string, start time.Time) (*os.File, error) {
	base := Name(kind, start, "")
	for i := 0; i < 1000; i++ {
		n := base + ext
		if i > 0 {
			n = fmt.Sprintf("%s-%d%s", base, i, ext)
		}
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, Mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free file name for %s in %s", base, dir)
}

// Parse returns the kind (trace, records or payloads) and the start, to the millisecond, of a
// file llmtap's recorder wrote, from its name.
func Parse(path string) (kind string, start time.Time, err error) {
	m := name.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return "", time.Time{}, fmt.Errorf("%s: not an llmtap recording file name (trace-, records- or payloads-<UTC start>.jsonl): its kind and start time are unknown", path)
	}
	start, err = time.Parse(layout, m[2])
	return m[1], start, err
}

// Compare orders paths of recording files as they were created: by folder, then by name, a
// file before the siblings Create suffixed -1, -2 … (made within the same millisecond), which
// plain string order puts first ('-' sorts before '.'). Other names compare as strings. Use
// it with slices.SortFunc.
func Compare(a, b string) int {
	ka, na := sortKey(a)
	kb, nb := sortKey(b)
	if c := strings.Compare(ka, kb); c != 0 {
		return c
	}
	return cmp.Compare(na, nb)
}

// sortKey is a path without its name's -<n> suffix, and n (0 for none).
func sortKey(path string) (string, int) {
	base := filepath.Base(path)
	m := name.FindStringSubmatchIndex(base)
	if m == nil || m[6] < 0 {
		return path, 0
	}
	n, err := strconv.Atoi(base[m[6]:m[7]])
	if err != nil {
		return path, 0
	}
	dir := path[:len(path)-len(base)]
	return dir + base[:m[6]-1] + base[m[7]:], n
}
