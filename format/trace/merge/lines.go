package merge

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
)

// traceFileStart returns the absolute start of an llmtap trace file, from its name (a
// Parquet file's from its metadata, to the nanosecond).
func traceFileStart(path string) (time.Time, error) {
	kind, start, err := recfile.Parse(path)
	if err == nil && kind != recfile.KindTrace {
		err = fmt.Errorf("%s: a %s file, not a trace file (trace-<UTC start>.jsonl)", path, kind)
	}
	if err == nil && strings.HasSuffix(path, parquetfile.Ext) {
		var meta time.Time
		if _, meta, err = parquetfile.Meta(path); err == nil && !meta.IsZero() {
			start = meta
		}
	}
	return start, err
}

// ExpandParquet replaces every folder among paths by the recorder's Parquet files below it
// (its hourly partitions): trace files when it holds any, else records files.
func ExpandParquet(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := parquetfile.Files(p, recfile.KindTrace)
		if err != nil {
			files, err = parquetfile.Files(p, recfile.KindRecords)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: a folder to merge must hold the recorder's Parquet trace or records files: %w", p, err)
		}
		out = append(out, files...)
	}
	return out, nil
}

// maxMergeLine bounds one line of a records or payloads file in a merge. The recorder's
// payload lines are bounded by its max_body (64 MiB at most), a record line by the record's
// own bounded fields; a longer line is not one the recorder wrote.
const maxMergeLine = 65 << 20

// mergeKind returns the one kind (trace, records or payloads) of the files of a merge.
func mergeKind(paths []string) (string, error) {
	var kind string
	for _, p := range paths {
		k, _, err := recfile.Parse(p)
		if err != nil {
			return "", err
		}
		if kind != "" && k != kind {
			return "", fmt.Errorf("%s is a %s file and %s a %s file: merge files of one kind at a time", paths[0], kind, p, k)
		}
		kind = k
	}
	return kind, nil
}
