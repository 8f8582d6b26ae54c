package commands

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/format/trace/merge"
)

func traceMerge(stdout, stderr io.Writer, args []string) (int, error) {
	fs := flag.NewFlagSet("llmtap trace merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "-", `output file ("-": stdout); created with mode 0600`)
	roundMs := fs.Bool("round-ms", false, "write whole milliseconds (for tools that want integer timestamps)")
	keepSessions := fs.Bool("keep-sessions", false, "write session_id and delay (off by default: AIPerf would append earlier turns to prompts that may already hold them)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed lines instead of stopping at the first")
	window := fs.Duration("window", merge.DefaultWindow, "how much earlier than a file's latest row a later row of it may arrive: the longest request (rows are written when their request ends)")
	if code, err := parseFiles(fs, args); err != nil { // trace.go
		return code, err
	}
	if !(*window > 0) {
		return 2, fmt.Errorf("--window %v: want a positive duration", *window)
	}
	paths, err := merge.ExpandParquet(fs.Args())
	if err != nil {
		return 1, err
	}
	m, err := merge.Open(paths, merge.Options{Window: *window, SkipBad: *skipBad,
		Trace: trace.WriterOptions{RoundMs: *roundMs, OmitSessions: !*keepSessions}})
	if err != nil {
		return 1, err
	}
	defer m.Close()
	// The rows held are the heap: collect at half the default growth, so the process holds
	// ~1.5 times its rows instead of ~2 (the merge is CPU-light; docs/fleet.md measures it).
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	var n int
	err = writeOut(stdout, *out, func(w io.Writer) (err error) {
		n, err = m.Write(w)
		return err
	})
	kind := m.Kind()
	if kind == "trace" {
		kind = "mooncake"
	}
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "llmtap trace merge: %d requests from %d files to %s (%s)", n, len(paths), *out, kind)
	info := m.Info()
	if info.Torn > 0 {
		fmt.Fprintf(stderr, "; %d torn last lines ignored", info.Torn)
	}
	if info.Skipped > 0 {
		fmt.Fprintf(stderr, "; %d malformed lines skipped", info.Skipped)
	}
	fmt.Fprintln(stderr)
	return 0, nil
}
