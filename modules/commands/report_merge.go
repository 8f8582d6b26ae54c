package commands

import (
	"errors"
	"fmt"
	"io"

	"github.com/llmtap/llmtap/load/bench"
)

// reportMerge is `llmtap report --merge DIR…`: the workers' exports merged into out, and the
// merged summary printed as llmtap bench prints its own.
func reportMerge(stdout io.Writer, dirs []string, out string) (int, error) {
	if len(dirs) == 0 {
		return 2, errors.New("--merge: name the artifact folders of the workers to merge")
	}
	e, files, err := bench.Merge(dirs, out)
	if err != nil {
		return 1, fmt.Errorf("--merge: %w", err)
	}
	fmt.Fprintf(stdout, "merged %d worker exports\n", len(dirs))
	if err := bench.WriteConsole(stdout, e, e.End.Sub(e.Start), files); err != nil {
		return 1, err
	}
	return 0, nil
}
