// Package tokens counts tokens with a real BPE tokenizer (OpenAI's o200k_base, vocabulary
// embedded in the binary) for responses and prompts whose server reported no usage.
//
// Counting is far too slow for the per-event hot path (microseconds per word); callers count once
// per request, off the request path, in the record pipeline.
package tokens

import (
	"strings"
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

// Count returns the number of o200k_base tokens in text, the length of IDs(text). The first
// call loads the vocabulary (tens of milliseconds); Count is safe for concurrent use.
func Count(text []byte) (int, error) {
	if len(text) == 0 {
		return 0, nil
	}
	once.Do(load)
	if err != nil {
		return 0, err
	}
	if !utf8.Valid(text) {
		return codec.Count(string(text)) // replaced before it is split, as in IDs
	}
	ids, err := encodeFast(string(text))
	return len(ids), err
}

// IDs returns the o200k_base token ids of text, for callers that need more than a count (the
// recorder hashes prompts in blocks of tokens): the ids the library's Encode returns, found
// faster (see encodeFast).
func IDs(text []byte) ([]uint, error) {
	if len(text) == 0 {
		return nil, nil
	}
	once.Do(load)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(text) {
		// The library replaces invalid sequences (ErrorModeReplace) before it splits.
		ids, _, err := codec.Encode(string(text))
		return ids, err
	}
	return encodeFast(string(text))
}

// pieceCache maps pieces of text (splitO200k's) to their token ids. Text repeats its words,
// so almost every piece after the first few thousand is found here instead of being encoded.
type pieceCache map[string][]uint

// Bounds of a pieceCache: pieces longer than maxCachedPiece bytes are encoded every time, and
// a cache holding maxCachedPieces pieces is emptied (a few megabytes at most).
const (
	maxCachedPiece  = 64
	maxCachedPieces = 1 << 15
)

// pieceCaches lend each encoding goroutine a cache of its own.
var pieceCaches = sync.Pool{New: func() any { return make(pieceCache) }}

// encodeFast is codec.Encode of valid UTF-8 without the library's pattern matching: the text
// is cut into pieces by splitO200k (the same pattern, by hand), and each piece is encoded by
// the library alone (one piece in, the same piece matched) or found in the cache. It is about
// ten times faster than codec.Encode on prose; TestIDsMatchTheLibrary holds it to the
// library's ids.
func encodeFast(text string) ([]uint, error) {
	cache := pieceCaches.Get().(pieceCache)
	defer pieceCaches.Put(cache)
	ids := make([]uint, 0, len(text)/4+1)
	var failed error
	splitO200k(text, func(piece string) {
		if failed != nil {
			return
		}
		if got, ok := cache[piece]; ok {
			ids = append(ids, got...)
			return
		}
		got, _, err := codec.Encode(piece)
		if err != nil {
			failed = err
			return
		}
		ids = append(ids, got...)
		if len(piece) <= maxCachedPiece {
			if len(cache) >= maxCachedPieces {
				clear(cache)
			}
			cache[strings.Clone(piece)] = got
		}
	})
	return ids, failed
}

// Warm loads the vocabulary now so the first count does not pay for it.
func Warm() error {
	once.Do(load)
	return err
}
