// Package sample is the stateless coin llmtap uses wherever it keeps a fraction of requests
// (recording, mirroring): a hash of the request id and a seed, so the same id gets the same
// answer in every process and on every run, and a test can predict exactly which requests a
// sample keeps.
package sample

import (
	"encoding/binary"
	"math"
)

// Coin keeps a fraction of request ids. It is read-only after New and safe for concurrent use.
type Coin struct {
	threshold uint64 // keep when hash < threshold
	all       bool
	seed      [8]byte
}

// New returns a coin that keeps fraction of ids (1 or more keeps every id, 0 or less none),
// chosen by seed.
func New(fraction float64, seed uint64) Coin {
	c := Coin{all: fraction >= 1}
	binary.LittleEndian.PutUint64(c.seed[:], seed)
	if !c.all && fraction > 0 {
		c.threshold = uint64(fraction * math.MaxUint64)
	}
	return c
}

// Keep reports whether id is in the sample.
func (c Coin) Keep(id string) bool {
	return c.all || Hash(c.seed[:], id) < c.threshold
}

// Hash is FNV-1a over seed then s, followed by a finalizing mix so that ids differing only in
// their last characters (req-1, req-2) spread over the whole range. maphash's per-process
// seeds would make the choice differ between processes.
func Hash(seed []byte, s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, b := range seed {
		h = (h ^ uint64(b)) * prime
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	// splitmix64's finalizer.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
