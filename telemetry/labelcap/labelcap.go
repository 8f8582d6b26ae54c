// Package labelcap bounds the label values llmtap derives from what clients send (model names
// today, tenants later), in length and in number, with one rule shared by every consumer: the
// summary (telemetry/stats), the timeline, /metrics and the OpenTelemetry export.
//
// Length: a value longer than MaxLen bytes, or not valid UTF-8, is replaced by its first bytes
// (cut at a character boundary, invalid bytes replaced) followed by "~" and 16 hex digits of
// the SHA-256 of the whole value, MaxLen bytes at most; two values that differ anywhere keep
// different labels (short of a 64-bit hash collision), and the same value gets the same label
// in every process, so a fleet agrees.
//
// Number: a Set gives its own series to the first Max distinct (shortened) values it sees, and
// a value once given its own series keeps it for the life of the Set; every later value folds
// into Other. Other itself, and the empty value, never take a place.
package labelcap

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

const (
	// DefaultMax is the number of distinct values a Set gives their own series.
	DefaultMax = 64
	// MaxLen is the longest label value, in bytes.
	MaxLen = 128
	// Other is the value every value past a Set's limit is counted under.
	Other = "_other"

	hashLen = 1 + 16 // "~" and 16 hex digits
)

// Shorten returns s when it is at most MaxLen bytes of valid UTF-8, else its shortened form.
func Shorten(s string) string { return ShortenTo(s, MaxLen) }

// ShortenTo is Shorten with another bound n (at least 32 bytes is sensible; smaller n are
// raised to the 17 bytes of the hash suffix plus one).
func ShortenTo(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	var buf [256]byte
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	return string(appendShort(b, s, n))
}

// appendShort appends the shortened form of s, at most n bytes, to b.
func appendShort(b []byte, s string, n int) []byte {
	n = max(n, hashLen+1)
	keep := n - hashLen
	for i := 0; i < len(s); {
		c, w := utf8.DecodeRuneInString(s[i:]) // an invalid byte is U+FFFD, 3 bytes written
		if utf8.RuneLen(c) > keep {
			break
		}
		b = utf8.AppendRune(b, c)
		keep -= utf8.RuneLen(c)
		i += w
	}
	// Sum256 only reads its argument; viewing s as bytes spares a copy of a long value on every
	// call (a known long model name is looked up per record).
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	b = append(b, '~')
	return hex.AppendEncode(b, sum[:8])
}

// Set folds the values of one label. It is safe for concurrent use; Label of a value it already
// knows takes no lock and allocates nothing: the known values are an immutable map replaced
// (copied) when a value is added, which happens at most Max times.
type Set struct {
	max    int
	mu     sync.Mutex                        // serializes additions
	known  atomic.Pointer[map[string]string] // label -> label (the stored copy, shared by callers)
	folded atomic.Int64
}

// New returns a Set that gives max values their own series (DefaultMax when max ≤ 0).
func New(max int) *Set {
	if max <= 0 {
		max = DefaultMax
	}
	s := &Set{max: max}
	s.known.Store(&map[string]string{})
	return s
}

// Label returns the label of v: v shortened, when it has (or now gets) its own series, else
// Other. folded reports the latter. The empty value is returned as it is, never counted.
func (s *Set) Label(v string) (label string, folded bool) {
	if v == "" || v == Other {
		return v, false
	}
	var buf [MaxLen]byte
	var short []byte // the shortened form, when v needs one; on the stack
	if len(v) > MaxLen || !utf8.ValidString(v) {
		short = appendShort(buf[:0], v, MaxLen)
	}
	known := *s.known.Load()
	if l, ok := lookup(known, v, short); ok {
		return l, false
	}
	if len(known) >= s.max {
		s.folded.Add(1)
		return Other, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	known = *s.known.Load()
	if l, ok := lookup(known, v, short); ok {
		return l, false
	}
	if len(known) >= s.max {
		s.folded.Add(1)
		return Other, true
	}
	l := string(short)
	if short == nil {
		l = string([]byte(v)) // a copy: v may be a slice of a large buffer
	}
	next := make(map[string]string, len(known)+1)
	for k, x := range known {
		next[k] = x
	}
	next[l] = l
	s.known.Store(&next)
	return l, false
}

// lookup finds the stored label of v (or of its shortened form) in known. Indexing with
// string(short) does not allocate.
func lookup(known map[string]string, v string, short []byte) (string, bool) {
	if short != nil {
		l, ok := known[string(short)]
		return l, ok
	}
	l, ok := known[v]
	return l, ok
}

// Get is Label without the folded flag, for callers that take a func(string) string.
func (s *Set) Get(v string) string {
	l, _ := s.Label(v)
	return l
}

// Reset forgets every value, so the next Max distinct values get series of their own: for a
// consumer whose series were dropped too (and for tests that share a process-wide Set).
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known.Store(&map[string]string{})
	s.folded.Store(0)
}

// Folded counts the values Label folded into Other.
func (s *Set) Folded() int64 { return s.folded.Load() }

// Max is the number of values the Set gives their own series.
func (s *Set) Max() int { return s.max }
