package recorder

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	mrand "math/rand/v2"
	"sync"

	"github.com/llmtap/llmtap/format/trace"
)

// MinFleetKey is the shortest Options.FleetKey accepted, in bytes.
const MinFleetKey = 16

// idBits is the width of a hash id: ids stay below 2^53, so JSON readers that hold numbers as
// doubles (JavaScript, jq) read them exactly.
const idBits = 53

// processKey is the block-id key of a process that was given none: drawn once, so ids agree
// across the rotations and reloads of one process but not with any other process.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (it panics when the system has no source)
	return k
})

// prefixIDs derives the chained block ids of prompts: a block's id is HMAC-SHA256, keyed with
// the fleet key, of the previous block's id and this block's token ids, cut to 53 bits. The id
// depends on nothing but the key and the prompt, so every file, rotation and process sharing
// the key writes the same ids for the same prefix, and without the key a block's id cannot be
// confirmed by guessing its text. Not safe for concurrent use: the writer goroutine owns it.
type prefixIDs struct {
	mac hash.Hash
	buf []byte
	sum []byte
}

// newPrefixIDs returns ids keyed with key, or with the process's random key when key is empty.
func newPrefixIDs(key []byte) *prefixIDs {
	if len(key) == 0 {
		key = processKey()
	}
	return &prefixIDs{mac: hmac.New(sha256.New, key)}
}

// assign appends to dst the ids of the blocks of toks, then fresh ids or a cut so that the
// list has exactly want ids.
func (p *prefixIDs) assign(dst []int64, toks []uint, want int) []int64 {
	want += len(dst)
	var prev uint64
	for start := 0; start < len(toks) && len(dst) < want; start += trace.BlockTokens {
		block := toks[start:min(start+trace.BlockTokens, len(toks))]
		b := binary.LittleEndian.AppendUint64(p.buf[:0], prev)
		for _, t := range block {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
		p.buf = b
		p.mac.Reset()
		p.mac.Write(b)
		p.sum = p.mac.Sum(p.sum[:0])
		prev = binary.LittleEndian.Uint64(p.sum) >> (64 - idBits)
		dst = append(dst, int64(prev))
	}
	for len(dst) < want {
		// Blocks the server counted (its chat template) but the text does not show: random,
		// so unique in any merge of files (a collision among a billion blocks has odds below
		// 1 in 10^4).
		dst = append(dst, mrand.Int64N(1<<idBits))
	}
	return dst
}
