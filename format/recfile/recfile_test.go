package recfile

import (
	"os"
	"path/filepath"
	"slices"
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

// Compare puts the files Create made in the order it made them, also when several share a
// millisecond (string order puts "-1" before the unsuffixed name), and a later millisecond
// after every suffixed sibling of an earlier one.
func TestCompareIsCreationOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 12, 6, 9, 30, 15, 123456789, time.UTC)
	var made []string
	for _, at := range []time.Time{start, start, start, start.Add(time.Millisecond), start.Add(time.Millisecond)} {
		f, err := Create(dir, KindRecords, ".parquet", at)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		made = append(made, f.Name())
	}
	for _, order := range [][]int{{4, 3, 2, 1, 0}, {1, 0, 4, 2, 3}, {2, 4, 0, 3, 1}} {
		got := make([]string, len(made))
		for i, j := range order {
			got[i] = made[j]
		}
		slices.SortFunc(got, Compare)
		if !slices.Equal(got, made) {
			t.Errorf("sorted %v\nwant %v", got, made)
		}
	}
	plain := []string{"b/x", "a/records-20261206T083015.123Z-2.jsonl", "a/records-20261206T083015.123Z.jsonl", "a/notes.txt"}
	slices.SortFunc(plain, Compare)
	if want := []string{"a/notes.txt", "a/records-20261206T083015.123Z.jsonl", "a/records-20261206T083015.123Z-2.jsonl", "b/x"}; !slices.Equal(plain, want) {
		t.Errorf("sorted %v, want %v", plain, want)
	}
}
