package tokens

import (
	"os"
	"path/filepath"
	"slices"
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

// TestEncoderIDsAreTheCountedTokens: each counter's IDs are the tokens its Count counts, the
// Hugging Face file's own (not o200k_base's), so the recorder's block ids and the records'
// counts come from one tokenizer; IDsWith falls back to o200k_base only for a counter that
// gives no ids.
func TestEncoderIDsAreTheCountedTokens(t *testing.T) {
	t.Parallel()
	hfc, err := Load(filepath.Join("hf", "testdata", "bytelevel-llama3.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("Once upon a time, the keeper's lamp burned 3.5 hours.\nThe end.")
	for _, c := range []Counter{Default, hfc} {
		ids, err := IDsWith(c, text)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Count(text); n != len(ids) || n == 0 {
			t.Errorf("%s: %d ids, Count %d", c.Name(), len(ids), n)
		}
	}
	hfIDs, _ := IDsWith(hfc, text)
	o200k, _ := IDs(text)
	if slices.Equal(hfIDs, o200k) {
		t.Errorf("the tokenizer file's ids are o200k_base's: %v", hfIDs)
	}
	if got, _ := IDsWith(countOnly{}, text); !slices.Equal(got, o200k) {
		t.Errorf("a counter without ids: %v, want o200k_base's %v", got, o200k)
	}
}

type countOnly struct{}

func (countOnly) Count(text []byte) (int, error) { return len(text), nil }
func (countOnly) Name() string                   { return "count-only" }
