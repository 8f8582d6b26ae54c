package hf

import (
	"container/heap"
	"fmt"
	"unicode/utf8"
)

// bpe is the BPE model: a vocabulary and the ranked merges of pairs of its tokens.
type bpe struct {
	vocab        map[string]int32
	merges       map[uint64]merge // key: pairKey(left, right)
	unk          int32            // id of unk_token; -1 when none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string     // continuing_subword_prefix: spelled before every symbol but the first
	suffix       string     // end_of_word_suffix: spelled after the last symbol
	byteIDs      [256]int32 // ids of the <0xXX> tokens for byte_fallback; -1 where missing
}

// merge is what a pair of symbols becomes and how early it is merged (lower first).
type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one piece of a word being merged, in a doubly linked list over a slice.
type symbol struct {
	id         int32
	prev, next int32 // indexes in the word; -1 at the ends
	size       int   // bytes of the word it spans; 0 once merged into its left neighbour
}

// candidate is a pair that can be merged, at position pos (the left symbol).
type candidate struct{ pos, rank, id int32 }

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].pos < c[j].pos
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// encodeWord appends the ids of one pre-tokenized word to out, as the reference's BPE does:
// one symbol per character (byte_fallback tokens or unk_token for characters the vocabulary
// lacks; a character with neither is dropped), then the lowest-ranked merge first, leftmost
// among equals, until none applies.
func (m *bpe) encodeWord(w string, out []int) []int {
	if w == "" {
		return out
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(out, int(id))
		}
	}
	syms := make([]symbol, 0, len(w))
	add := func(id int32, size int) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1, size: size})
	}
	unk, unkSize := int32(-1), 0
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+n]
		if m.prefix != "" && i > 0 {
			s = m.prefix + s
		}
		if m.suffix != "" && i+n == len(w) {
			s += m.suffix
		}
		if id, ok := m.vocab[s]; ok {
			if unk >= 0 {
				add(unk, unkSize)
				unk = -1
			}
			add(id, n)
			i += n
			continue
		}
		if m.byteFallback && m.hasBytes(s) {
			// A pending unknown stays pending (it follows the bytes), as in the reference.
			for j := 0; j < len(s); j++ {
				add(m.byteIDs[s[j]], 1)
			}
			i += n
			continue
		}
		if m.unk >= 0 {
			switch {
			case unk >= 0 && m.fuseUnk:
				unkSize += n
			case unk >= 0:
				add(unk, unkSize)
				unkSize = n
			default:
				unk, unkSize = m.unk, n
			}
		}
		i += n
	}
	if unk >= 0 {
		add(unk, unkSize)
	}
	if len(syms) == 0 {
		return out
	}
	syms[len(syms)-1].next = -1
	if len(syms) > 1 && len(m.merges) > 0 {
		m.mergeAll(syms)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, int(syms[i].id))
	}
	return out
}

// hasBytes reports whether every byte of s has a <0xXX> token.
func (m *bpe) hasBytes(s string) bool {
	for j := 0; j < len(s); j++ {
		if m.byteIDs[s[j]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll applies merges to syms until none applies (the reference's Word::merge_all).
func (m *bpe) mergeAll(syms []symbol) {
	q := make(candidates, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q = append(q, candidate{pos: int32(i), rank: mg.rank, id: mg.id})
		}
	}
	heap.Init(&q)
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		left := &syms[c.pos]
		if left.size == 0 || left.next < 0 {
			continue // merged away, or nothing to its right any more
		}
		r := left.next
		if mg, ok := m.merges[pairKey(left.id, syms[r].id)]; !ok || mg.id != c.id {
			continue // the pair changed since this candidate was queued
		}
		left.id = c.id
		left.size += syms[r].size
		left.next = syms[r].next
		syms[r].size = 0
		if left.next >= 0 {
			syms[left.next].prev = c.pos
		}
		if p := left.prev; p >= 0 {
			if mg, ok := m.merges[pairKey(syms[p].id, left.id)]; ok {
				heap.Push(&q, candidate{pos: p, rank: mg.rank, id: mg.id})
			}
		}
		if n := left.next; n >= 0 {
			if mg, ok := m.merges[pairKey(left.id, syms[n].id)]; ok {
				heap.Push(&q, candidate{pos: c.pos, rank: mg.rank, id: mg.id})
			}
		}
	}
}

// byteToken is how byte_fallback spells byte b in the vocabulary.
func byteToken(b int) string { return fmt.Sprintf("<0x%02X>", b) }
