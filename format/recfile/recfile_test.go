package recfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A name Create gives parses back to its kind and its start to the millisecond, and a taken
// name gets the next free suffix, which parses too.
func TestCreateParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 12, 6, 9, 30, 15, 123456789, time.FixedZone("x", 3600))
	var names []string
	for range 3 {
		f, err := Create(dir, KindPayloads, ".jsonl", start)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		names = append(names, filepath.Base(f.Name()))
		st, err := os.Stat(f.Name())
		if err != nil || st.Mode().Perm() != Mode {
			t.Errorf("%s: %v, mode %v, want %v", f.Name(), err, st.Mode().Perm(), os.FileMode(Mode))
		}
		kind, got, err := Parse(f.Name())
		if err != nil || kind != KindPayloads || !got.Equal(start.Truncate(time.Millisecond)) {
			t.Errorf("Parse(%s) = %s, %v, %v", f.Name(), kind, got, err)
		}
	}
	want := []string{"payloads-20261206T083015.123Z.jsonl", "payloads-20261206T083015.123Z-1.jsonl", "payloads-20261206T083015.123Z-2.jsonl"}
	if strings.Join(names, " ") != strings.Join(want, " ") || Name(KindPayloads, start, ".jsonl") != want[0] {
		t.Errorf("names %v, want %v", names, want)
	}
	for _, bad := range []string{"trace.jsonl", "tenant-20261206T083015.123Z.jsonl", "trace-20261206T083015Z.jsonl", "trace-20261206T083015.123Z.csv"} {
		if _, _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "not an llmtap recording file name") {
			t.Errorf("Parse(%s): %v, want an error", bad, err)
		}
	}
}
