// Package tokens counts tokens with a real BPE tokenizer (OpenAI's o200k_base, vocabulary
// embedded in the binary) for responses and prompts whose server reported no usage.
//
// Counting is far too slow for the per-event hot path (microseconds per word); callers count once
// per request, off the request path, in the record pipeline.
package tokens

import (
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding is the name of the encoding Count uses.
const Encoding = "o200k_base"

var (
	once  sync.Once
	codec tokenizer.Codec
	err   error
)

func load() {
	codec, err = tokenizer.Get(tokenizer.O200kBase)
	if err == nil {
		// Streams may be cut inside a multi-byte character; count what the bytes spell
		// after replacing invalid sequences, as tiktoken's errors="replace" does.
		codec.SetErrorMode(tokenizer.ErrorModeReplace)
	}
}

// Count returns the number of o200k_base tokens in text. The first call loads the vocabulary
// (tens of milliseconds); Count is safe for concurrent use.
func Count(text []byte) (int, error) {
	if len(text) == 0 {
		return 0, nil
	}
	once.Do(load)
	if err != nil {
		return 0, err
	}
	return codec.Count(string(text))
}

// IDs returns the o200k_base token ids of text, for callers that need more than a count (the
// recorder hashes prompts in blocks of tokens). It allocates the token strings too (the
// tokenizer's only encoding call returns both), so use Count when the number is enough.
func IDs(text []byte) ([]uint, error) {
	if len(text) == 0 {
		return nil, nil
	}
	once.Do(load)
	if err != nil {
		return nil, err
	}
	ids, _, err := codec.Encode(string(text))
	return ids, err
}

// Warm loads the vocabulary now so the first count does not pay for it.
func Warm() error {
	once.Do(load)
	return err
}

// ValidUTF8 reports whether text is valid UTF-8 (a cut multi-byte character makes a count
// approximate by one token at most).
func ValidUTF8(text []byte) bool { return utf8.Valid(text) }
