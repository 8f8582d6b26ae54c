package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoad checks the counters Load gives: the default for no file, one shared counter per
// version of a file, named after the file (or its folder), a fresh one when the file changes,
// and errors for what cannot be read.
func TestLoad(t *testing.T) {
	if c, err := Load(""); err != nil || c != Default || c.Name() != "o200k_base" {
		t.Fatalf(`Load("") = %v, %v; want the o200k_base default`, c, err)
	}
	src, err := os.ReadFile(filepath.Join("hf", "testdata", "stories260k-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "stories260K")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Load(path)
	if a != b {
		t.Error("two loads of the same file gave two tokenizers, want one shared")
	}
	if a.Name() != "hf:stories260K" {
		t.Errorf("name %q, want hf:stories260K (the folder of a tokenizer.json)", a.Name())
	}
	n, err := a.Count([]byte("Tell me about the lighthouse keeper."))
	if o, _ := Count([]byte("Tell me about the lighthouse keeper.")); err != nil || n == o {
		t.Errorf("the file's count %d (%v) equals o200k_base's %d: not counted with the file", n, err, o)
	}
	// A changed file is read again.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if c, _ := Load(path); c == a {
		t.Error("a file changed since it was loaded still gives the old tokenizer")
	}
	for _, tt := range []struct{ name, path, want string }{
		{"a missing file", filepath.Join(dir, "missing.json"), "no such file"},
		{"a folder", dir, "not a regular file"},
	} {
		if _, err := Load(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}
