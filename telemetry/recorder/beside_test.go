package recorder

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
)

// besideFiles returns the folder's files of kind, with their line counts.
func besideFiles(t *testing.T, dir, kind string) []int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, kind+"-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		if st.Mode().Perm() != recfile.Mode {
			t.Errorf("%s: mode %v, want %v", n, st.Mode().Perm(), os.FileMode(recfile.Mode))
		}
		c := 0
		for s := bufio.NewScanner(f); s.Scan(); {
			c++
		}
		f.Close()
		lines = append(lines, c)
	}
	return lines
}

// TestBesideRotatesWithTheRecorder writes lines beside two folders: the one whose recorder
// rotates at 1 byte gets a file per line, the other one file; a folder dropped from Dirs has
// its file closed, and a folder that cannot be written is reported once.
func TestBesideRotatesWithTheRecorder(t *testing.T) {
	small, big := t.TempDir(), t.TempDir()
	missing := filepath.Join(t.TempDir(), "gone")
	dirs := map[string]Options{
		small:   Options{RotateBytes: 1, RotateAge: time.Hour},
		big:     Options{}.withDefaults(),
		missing: Options{}.withDefaults(),
	}
	var errs []string
	b := &Beside{Kind: "side", Dirs: func() map[string]Options { return dirs },
		OnError: func(dir string, err error) { errs = append(errs, dir) }}
	for i := range 3 {
		b.WriteJSON(map[string]int{"i": i})
	}
	if got := besideFiles(t, small, "side"); len(got) != 3 || got[0] != 1 {
		t.Errorf("rotate at 1 byte: files with %v lines, want 3 of 1", got)
	}
	if got := besideFiles(t, big, "side"); len(got) != 1 || got[0] != 3 {
		t.Errorf("default rotation: files with %v lines, want 1 of 3", got)
	}
	if len(errs) != 1 || errs[0] != missing {
		t.Errorf("errors reported for %v, want one for %s", errs, missing)
	}
	delete(dirs, big)
	b.WriteJSON(map[string]int{"i": 3})
	if _, open := b.open[big]; open {
		t.Error("the file of a folder no longer recorded to is still open")
	}
	b.WriteJSON(func() {}) // does not encode
	if len(errs) != 2 || errs[1] != "" {
		t.Errorf("an encoding failure reported %v", errs)
	}
	b.Close()
	if len(b.open) != 0 {
		t.Errorf("%d files open after Close", len(b.open))
	}
}

// TestBesideRotatesByAge: a folder whose recorder rotates by age starts a new file once the
// current one is older (the age is read against the file's start).
func TestBesideRotatesByAge(t *testing.T) {
	dir := t.TempDir()
	o := Options{}.withDefaults()
	b := &Beside{Kind: "side", Dirs: func() map[string]Options { return map[string]Options{dir: o} }}
	b.WriteJSON(1)
	b.open[dir].start = b.open[dir].start.Add(-2 * DefaultRotateAge) // the file is now old
	b.WriteJSON(2)
	b.Close()
	if got := besideFiles(t, dir, "side"); len(got) != 2 {
		t.Errorf("files with %v lines; want 2 files after the first grew old", got)
	}
}
