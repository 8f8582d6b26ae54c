package recorder

import (
	"encoding/binary"
	"math"
	"path"
	"strings"

	"github.com/llmtap/llmtap/telemetry/record"
)

// filter decides which records are written: routes, models and sampling, in that order. It is
// read-only after construction and safe for concurrent use.
type filter struct {
	routes    []string
	models    []string
	threshold uint64 // keep when hash < threshold; math.MaxUint64 keeps all
	all       bool
	seedBytes [8]byte
}

func newFilter(o Options) *filter {
	f := &filter{routes: o.Routes, models: o.Models, all: o.Sample >= 1}
	binary.LittleEndian.PutUint64(f.seedBytes[:], o.Seed)
	if !f.all {
		f.threshold = uint64(o.Sample * math.MaxUint64)
	}
	return f
}

// keep reports whether r is to be written.
func (f *filter) keep(r *record.Record) bool {
	if len(f.routes) > 0 && !f.route(r.Path) {
		return false
	}
	if len(f.models) > 0 && !f.model(r.Model) {
		return false
	}
	return f.all || f.sample(r.RequestID)
}

func (f *filter) route(p string) bool {
	for _, prefix := range f.routes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func (f *filter) model(m string) bool {
	for _, pat := range f.models {
		if ok, _ := path.Match(pat, m); ok {
			return true
		}
	}
	return false
}

// sample hashes the request id with the seed: a stateless coin that gives the same answer in
// every process for the same request id and seed (maphash's per-process seeds would not).
func (f *filter) sample(id string) bool {
	return fnv64(f.seedBytes[:], id) < f.threshold
}

// fnv64 is FNV-1a over seed then s, followed by a finalizing mix so that ids differing only in
// their last characters (req-1, req-2) spread over the whole range.
func fnv64(seed []byte, s string) uint64 {
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
