package commands

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/llmtap/llmtap/shadow/trace"
	"github.com/llmtap/llmtap/telemetry/parquetfile"
)

// mergeNameLayout is the start time in llmtap's trace file names (telemetry/recorder's
// nameLayout): trace-<UTC start>.jsonl, or trace-<UTC start>-<n>.jsonl when the name was taken.
const mergeNameLayout = "20060102T150405.000Z"

var recordingFileName = regexp.MustCompile(`^(trace|records|payloads)-(\d{8}T\d{6}\.\d{3}Z)(?:-\d+)?\.(?:jsonl|parquet)$`)

// recordingFile returns the kind (trace, records or payloads) and the absolute start of a file
// llmtap's recorder wrote, from its name.
func recordingFile(path string) (kind string, start time.Time, err error) {
	m := recordingFileName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return "", time.Time{}, fmt.Errorf("%s: not an llmtap recording file name (trace-, records- or payloads-<UTC start>.jsonl): its kind and start time are unknown", path)
	}
	start, err = time.Parse(mergeNameLayout, m[2])
	return m[1], start, err
}

// traceFileStart returns the absolute start of an llmtap trace file, from its name (a
// Parquet file's from its metadata, to the nanosecond).
func traceFileStart(path string) (time.Time, error) {
	kind, start, err := recordingFile(path)
	if err == nil && kind != "trace" {
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

// expandParquet replaces every folder among paths by the recorder's Parquet files below it
// (its hourly partitions): trace files when it holds any, else records files.
func expandParquet(paths []string) ([]string, error) {
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
		files, err := parquetfile.Files(p, parquetfile.KindTrace)
		if err != nil {
			files, err = parquetfile.Files(p, parquetfile.KindRecords)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: a folder to merge must hold the recorder's Parquet trace or records files: %w", p, err)
		}
		out = append(out, files...)
	}
	return out, nil
}

func traceMerge(stdout, stderr io.Writer, args []string) (int, error) {
	fs := flag.NewFlagSet("llmtap trace merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "-", `output file ("-": stdout); created with mode 0600`)
	roundMs := fs.Bool("round-ms", false, "write whole milliseconds (for tools that want integer timestamps)")
	keepSessions := fs.Bool("keep-sessions", false, "write session_id and delay (off by default: AIPerf would append earlier turns to prompts that may already hold them)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed lines instead of stopping at the first")
	window := fs.Duration("window", DefaultMergeWindow, "how much earlier than a file's latest row a later row of it may arrive: the longest request (rows are written when their request ends)")
	if code, err := parseFiles(fs, args); err != nil { // trace.go
		return code, err
	}
	if !(*window > 0) {
		return 2, fmt.Errorf("--window %v: want a positive duration", *window)
	}
	paths, err := expandParquet(fs.Args())
	if err != nil {
		return 1, err
	}
	kind, err := mergeKind(paths)
	if err != nil {
		return 1, err
	}
	var info trace.Info
	var m *streamMerge
	if kind == "trace" {
		m, err = traceInputs(paths, *skipBad, &info)
	} else {
		m, err = lineInputs(kind, paths, *skipBad, &info)
	}
	if err != nil {
		return 1, err
	}
	defer m.close()
	m.window = *window
	// The rows held are the heap: collect at half the default growth, so the process holds
	// ~1.5 times its rows instead of ~2 (the merge is CPU-light; docs/fleet.md measures it).
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	var n int
	write := func(w io.Writer) (err error) {
		if kind == "trace" {
			n, err = writeTraceMerge(m, w, trace.WriterOptions{RoundMs: *roundMs, OmitSessions: !*keepSessions})
		} else {
			n, err = writeLineMerge(m, kind, w)
		}
		return err
	}
	if *out == "-" {
		err = write(stdout)
	} else {
		err = writeFile0600(*out, write)
	}
	if kind == "trace" {
		kind = "mooncake"
	}
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "llmtap trace merge: %d requests from %d files to %s (%s)", n, len(paths), *out, kind)
	if info.Torn > 0 {
		fmt.Fprintf(stderr, "; %d torn last lines ignored", info.Torn)
	}
	if info.Skipped > 0 {
		fmt.Fprintf(stderr, "; %d malformed lines skipped", info.Skipped)
	}
	fmt.Fprintln(stderr)
	return 0, nil
}
