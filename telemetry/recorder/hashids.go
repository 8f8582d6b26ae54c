package recorder

import (
	"encoding/binary"
	"hash/maphash"
)

// BlockTokens is the number of prompt tokens one hash id stands for (Mooncake's and AIPerf's
// block size, shadow/trace.BlockTokens).
const BlockTokens = 512

// prefixIDs numbers chained block hashes per trace file. Not safe for concurrent use: the
// writer goroutine owns it.
type prefixIDs struct {
	seed maphash.Seed
	ids  map[uint64]int64
	next int64
	max  int
	buf  []byte
}

func newPrefixIDs(max int) *prefixIDs {
	return &prefixIDs{seed: maphash.MakeSeed(), ids: make(map[uint64]int64), max: max}
}

// reset starts the numbering over, for a new file: each trace file stands alone.
func (p *prefixIDs) reset() {
	clear(p.ids)
	p.next = 0
}

// assign appends to dst the ids of the blocks of toks, then fresh ids or a cut so that the
// list has exactly want ids.
func (p *prefixIDs) assign(dst []int64, toks []uint, want int) []int64 {
	want += len(dst)
	var prev uint64
	for start := 0; start < len(toks) && len(dst) < want; start += BlockTokens {
		block := toks[start:min(start+BlockTokens, len(toks))]
		b := binary.LittleEndian.AppendUint64(p.buf[:0], prev)
		for _, t := range block {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
		p.buf = b
		prev = maphash.Bytes(p.seed, b)
		id, ok := p.ids[prev]
		if !ok {
			if len(p.ids) >= p.max {
				// Forget the old hashes rather than grow without bound; ids keep counting up,
				// so a forgotten block is never confused with a new one.
				clear(p.ids)
			}
			id = p.next
			p.next++
			p.ids[prev] = id
		}
		dst = append(dst, id)
	}
	for len(dst) < want {
		// Blocks the server counted (its chat template) but the text does not show: unique.
		dst = append(dst, p.next)
		p.next++
	}
	return dst
}

// blocks is ceil(tokens/BlockTokens).
func blocks(tokens int64) int {
	if tokens <= 0 {
		return 0
	}
	return int((tokens + BlockTokens - 1) / BlockTokens)
}
