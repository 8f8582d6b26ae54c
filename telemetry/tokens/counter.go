package tokens

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/tokens/hf"
)

// Counter counts tokens with one tokenizer. Implementations are safe for concurrent use.
type Counter interface {
	// Count returns the number of tokens in text.
	Count(text []byte) (int, error)
	// Name says which tokenizer counted, as records write it ("o200k_base", "hf:NAME").
	Name() string
}

// Encoder is a Counter that also returns the token ids it counts, for callers that need more
// than the number (the recorder's trace cuts prompts into blocks of tokens). Both counters of
// this package are Encoders.
type Encoder interface {
	Counter
	// IDs returns the token ids of text, the tokens Count counts.
	IDs(text []byte) ([]uint, error)
}

// IDsWith returns the token ids of text as c counts them: c's own when c is an Encoder, else
// (a Counter from outside this package) the default tokenizer's.
func IDsWith(c Counter, text []byte) ([]uint, error) {
	if e, ok := c.(Encoder); ok {
		return e.IDs(text)
	}
	return IDs(text)
}

type o200k struct{}

func (o200k) Count(text []byte) (int, error)  { return Count(text) }
func (o200k) IDs(text []byte) ([]uint, error) { return IDs(text) }
func (o200k) Name() string                    { return Encoding }

// Default is the built-in o200k_base counter, used where no tokenizer file is configured.
var Default Counter = o200k{}

// hfCounter counts with a Hugging Face tokenizer file.
type hfCounter struct {
	name string
	tok  *hf.Tokenizer
}

func (c *hfCounter) Count(text []byte) (int, error) {
	if len(text) == 0 {
		return 0, nil
	}
	return c.tok.Count(text)
}

func (c *hfCounter) IDs(text []byte) ([]uint, error) {
	if len(text) == 0 {
		return nil, nil
	}
	ids, err := c.tok.Encode(string(text))
	if err != nil {
		return nil, err
	}
	out := make([]uint, len(ids))
	for i, id := range ids {
		out[i] = uint(id)
	}
	return out, nil
}

func (c *hfCounter) Name() string { return c.name }

// fileKey identifies a version of a tokenizer file.
type fileKey struct {
	path    string
	size    int64
	modTime time.Time
}

var (
	loadMu sync.Mutex
	loaded = map[fileKey]*hfCounter{}
)

// Load returns a counter for the Hugging Face tokenizer file (tokenizer.json) at path; "" means
// Default. A file is read once per process for each version of it (path, size and modification
// time), so the handlers and configuration reloads that name it share one tokenizer. The name
// records carry is "hf:" and the file's name without .json, or its folder's name when the file
// is called tokenizer.json (models/Llama-3.1-8B/tokenizer.json counts as hf:Llama-3.1-8B).
func Load(path string) (Counter, error) {
	if path == "" {
		return Default, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", abs) // a device or a pipe could block or never end
	}
	key := fileKey{abs, fi.Size(), fi.ModTime()}
	loadMu.Lock()
	defer loadMu.Unlock()
	if c, ok := loaded[key]; ok {
		return c, nil
	}
	tok, err := hf.LoadFile(abs)
	if err != nil {
		return nil, err
	}
	c := &hfCounter{name: "hf:" + fileName(abs), tok: tok}
	for k := range loaded {
		if k.path == abs {
			delete(loaded, k) // an older version of the file
		}
	}
	loaded[key] = c
	return c, nil
}

func fileName(path string) string {
	base := filepath.Base(path)
	if base == "tokenizer.json" {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, ".json")
}
