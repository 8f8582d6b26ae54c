package parquetfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/parquet-go/parquet-go"
)

// batch is how many rows a read decodes at a time.
const batch = 256

// Is reports whether path names Parquet input: a .parquet file, or a folder holding one
// (at any depth, as Hive partitions do).
func Is(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !st.IsDir() {
		return strings.HasSuffix(path, Ext)
	}
	found := false
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, Ext) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// Files returns the Parquet files of kind under path: path itself when it is a file, else
// every <kind>-*.parquet below it, in partition order (dt, then hour, then name: by start).
// A folder without one is an error.
func Files(path, kind string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name := d.Name(); !d.IsDir() && strings.HasPrefix(name, kind+"-") && strings.HasSuffix(name, Ext) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no %s Parquet file (%s-*%s)", path, kind, kind, Ext)
	}
	slices.SortFunc(files, recfile.Compare) // dt=YYYY-MM-DD/hour=HH/<kind>-<UTC start>[-n] sorts by time
	return files, nil
}

// Meta returns the kind and start a file's metadata give ("" and zero when it has none).
func Meta(path string) (kind string, start time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	defer recovered(path, &err)
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: not a Parquet file: %w", path, err)
	}
	kind, _ = pf.Lookup(MetaKind)
	if s, ok := pf.Lookup(MetaStart); ok {
		if start, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return "", time.Time{}, fmt.Errorf("%s: metadata %s %q is not an RFC 3339 time", path, MetaStart, s)
		}
	}
	return kind, start, nil
}

// Reader reads the rows of one file.
type Reader[T any] struct {
	f     *os.File
	r     *parquet.GenericReader[T]
	name  string
	kind  string
	start time.Time
	buf   []T
	i, n  int
	row   int64
	done  bool
}

// Open opens a file written by a Writer of rows T, or any Parquet file whose columns have
// those names (others are ignored, missing ones read as null). Kind and Start come from its
// metadata when it has them.
func Open[T any](path string) (rd *Reader[T], err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			if !errors.Is(err, errCorrupt) {
				err = fmt.Errorf("%s: %w", path, err)
			}
		}
	}()
	defer recovered(path, &err)
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("not a Parquet file: %w", err)
	}
	rd = &Reader[T]{f: f, name: path, buf: make([]T, batch)}
	rd.kind, _ = pf.Lookup(MetaKind)
	if s, ok := pf.Lookup(MetaStart); ok {
		if rd.start, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("metadata %s %q is not an RFC 3339 time", MetaStart, s)
		}
	}
	if err = bounded(pf, st.Size()); err != nil {
		return nil, err
	}
	if err = readable[T](pf); err != nil {
		return nil, err
	}
	rd.r = parquet.NewGenericReader[T](pf)
	return rd, nil
}

// maxExpansion bounds how much larger than the file its pages may claim to decode to: zstd
// at its best on these columns stays far below it, so a claim past it is a corrupt or hostile
// footer, refused before the library allocates for it.
const maxExpansion = 256

// bounded checks the footer's claims against the file's size: the decoded size of every
// column chunk, and the rows and values, at most maxExpansion times the file plus 64 MiB.
func bounded(pf *parquet.File, size int64) error {
	limit := maxExpansion*size + 64<<20
	var total int64
	for i, rg := range pf.Metadata().RowGroups {
		if rg.NumRows < 0 || rg.NumRows > limit {
			return fmt.Errorf("%w: row group %d claims %d rows in a file of %d bytes", errCorrupt, i, rg.NumRows, size)
		}
		for _, c := range rg.Columns {
			m := c.MetaData
			if m.TotalUncompressedSize < 0 || m.NumValues < 0 || m.NumValues > limit {
				return fmt.Errorf("%w: row group %d claims %d values, %d bytes", errCorrupt, i, m.NumValues, m.TotalUncompressedSize)
			}
			if total += m.TotalUncompressedSize; total > limit {
				return fmt.Errorf("%w: its pages claim more than %d bytes decoded in a file of %d bytes", errCorrupt, limit, size)
			}
		}
	}
	return nil
}

// readable checks that the file has every required column of T, so that a file of another
// kind is refused rather than read as zero rows.
func readable[T any](pf *parquet.File) error {
	want := parquet.SchemaOf(*new(T))
	have := pf.Schema()
	for _, path := range want.Columns() {
		leaf, _ := want.Lookup(path...)
		if leaf.Node.Optional() || leaf.Node.Repeated() || len(path) > 1 {
			continue
		}
		if _, ok := have.Lookup(path...); !ok {
			return fmt.Errorf("no column %q: not a file of these rows", strings.Join(path, "."))
		}
	}
	return nil
}

// Kind is the file's kind from its metadata ("" when it has none).
func (rd *Reader[T]) Kind() string { return rd.kind }

// Start is the file's start from its metadata (zero when it has none).
func (rd *Reader[T]) Start() time.Time { return rd.start }

// Row is the number of rows returned so far.
func (rd *Reader[T]) Row() int64 { return rd.row }

// errCorrupt is what a panic of the Parquet library on a malformed file becomes.
var errCorrupt = errors.New("corrupt Parquet file")

// recovered turns a panic of the Parquet library (it panics on some malformed pages) into
// *err, naming the file.
func recovered(name string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %w (%v)", name, errCorrupt, p)
	}
}

// Next returns the next row, io.EOF after the last.
func (rd *Reader[T]) Next() (row T, err error) {
	if rd.done && rd.i >= rd.n {
		return row, io.EOF
	}
	defer func() {
		if err != nil && !errors.Is(err, io.EOF) {
			rd.done, rd.i, rd.n = true, 0, 0
		}
	}()
	defer recovered(rd.name, &err)
	return rd.next()
}

func (rd *Reader[T]) next() (T, error) {
	for rd.i >= rd.n {
		var zero T
		if rd.done {
			return zero, io.EOF
		}
		clear(rd.buf)
		n, err := rd.r.Read(rd.buf)
		rd.i, rd.n = 0, n
		if errors.Is(err, io.EOF) {
			rd.done = true
		} else if err != nil {
			rd.done = true
			return zero, fmt.Errorf("%s: row %d: %w", rd.name, rd.row+int64(n)+1, err)
		}
	}
	rd.i++
	rd.row++
	return rd.buf[rd.i-1], nil
}

// Close closes the file.
func (rd *Reader[T]) Close() (err error) {
	defer func() { err = errors.Join(err, rd.f.Close()) }()
	defer recovered(rd.name, &err)
	return rd.r.Close()
}
