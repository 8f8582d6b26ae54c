package commands

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/llmtap/llmtap/shadow/trace"
)

// mergeNameLayout is the start time in llmtap's trace file names (telemetry/recorder's
// nameLayout): trace-<UTC start>.jsonl, or trace-<UTC start>-<n>.jsonl when the name was taken.
const mergeNameLayout = "20060102T150405.000Z"

var recordingFileName = regexp.MustCompile(`^(trace|records|payloads)-(\d{8}T\d{6}\.\d{3}Z)(?:-\d+)?\.jsonl$`)

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

// traceFileStart returns the absolute start of an llmtap trace file, from its name.
func traceFileStart(path string) (time.Time, error) {
	kind, start, err := recordingFile(path)
	if err == nil && kind != "trace" {
		err = fmt.Errorf("%s: a %s file, not a trace file (trace-<UTC start>.jsonl)", path, kind)
	}
	return start, err
}

// mergedRequest is one request of a merge, at its absolute arrival time.
type mergedRequest struct {
	at  time.Time
	req trace.Request
}

// mergeTraces reads llmtap trace files of any number of instances and rotations and returns
// their requests in order of absolute arrival (file order for equal times), rebased to the
// earliest, with hash ids renumbered densely from 0 in order of first appearance: equal ids in
// the files stay equal, different ids stay different.
func mergeTraces(paths []string, skipBad bool) ([]trace.Request, trace.Info, error) {
	var all []mergedRequest
	var info trace.Info
	for _, p := range paths {
		start, err := traceFileStart(p)
		if err != nil {
			return nil, info, err
		}
		reqs, in, err := trace.ReadFile(p, trace.Options{Format: trace.FormatMooncake, SkipBad: skipBad})
		if err != nil {
			return nil, info, err
		}
		info.Torn += in.Torn
		info.Skipped += in.Skipped
		for _, r := range reqs {
			all = append(all, mergedRequest{at: start.Add(r.Timestamp), req: r})
		}
	}
	slices.SortStableFunc(all, func(a, b mergedRequest) int { return a.at.Compare(b.at) })
	out := make([]trace.Request, len(all))
	dense := make(map[int64]int64)
	for i, m := range all {
		r := m.req
		r.Timestamp = m.at.Sub(all[0].at)
		ids := make([]int64, len(r.HashIDs))
		for j, id := range r.HashIDs {
			d, ok := dense[id]
			if !ok {
				d = int64(len(dense))
				dense[id] = d
			}
			ids[j] = d
		}
		r.HashIDs = ids
		out[i] = r
	}
	return out, info, nil
}

func traceMerge(stdout, stderr io.Writer, args []string) (int, error) {
	fs := flag.NewFlagSet("llmtap trace merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "-", `output file ("-": stdout); created with mode 0600`)
	roundMs := fs.Bool("round-ms", false, "write whole milliseconds (for tools that want integer timestamps)")
	keepSessions := fs.Bool("keep-sessions", false, "write session_id and delay (off by default: AIPerf would append earlier turns to prompts that may already hold them)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed lines instead of stopping at the first")
	if code, err := parseFiles(fs, args); err != nil { // trace.go
		return code, err
	}
	kind, err := mergeKind(fs.Args())
	if err != nil {
		return 1, err
	}
	var n int
	var info trace.Info
	switch kind {
	case "trace":
		var reqs []trace.Request
		if reqs, info, err = mergeTraces(fs.Args(), *skipBad); err != nil {
			return 1, err
		}
		err = writeMooncake(stdout, *out, reqs, trace.WriterOptions{RoundMs: *roundMs, OmitSessions: !*keepSessions})
		n = len(reqs)
		kind = "mooncake"
	default:
		var lines []mergedLine
		if lines, info, err = mergeLines(kind, fs.Args(), *skipBad); err != nil {
			return 1, err
		}
		err = writeLines(stdout, *out, lines)
		n = len(lines)
	}
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "llmtap trace merge: %d requests from %d files to %s (%s)", n, fs.NArg(), *out, kind)
	if info.Torn > 0 {
		fmt.Fprintf(stderr, "; %d torn last lines ignored", info.Torn)
	}
	if info.Skipped > 0 {
		fmt.Fprintf(stderr, "; %d malformed lines skipped", info.Skipped)
	}
	fmt.Fprintln(stderr)
	return 0, nil
}
