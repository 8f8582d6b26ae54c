package mirror

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// secret is what makes the sample and the loop marker impossible for a client to steer: a key
// drawn from crypto/rand once per process, and a counter. It is process-wide, not per Mirror,
// so that a config reload's new Mirror recognises the copies of the old one.
type secret struct {
	mac  [32]byte // the HMAC key of MarkerHeader's signature
	salt string   // the prefix of every sample key
	n    atomic.Uint64
}

var processSecret = sync.OnceValue(func() *secret {
	s := new(secret)
	var salt [16]byte
	_, _ = rand.Read(s.mac[:]) // crypto/rand.Read never fails (it crashes the program instead)
	_, _ = rand.Read(salt[:])
	s.salt = base64.RawURLEncoding.EncodeToString(salt[:]) + "-"
	return s
})

// key returns a fresh sample key: the salt and the next count, so every request is a fresh
// draw whatever its headers, and nobody outside the process can tell which draws are kept.
func (s *secret) key() string { return s.salt + strconv.FormatUint(s.n.Add(1), 10) }

// sigSep separates the live request id from its signature in MarkerHeader.
const sigSep = ";sig="

// sign returns MarkerHeader's value for a copy of the live request id.
func (s *secret) sign(id string) string { return id + sigSep + s.sum(id) }

func (s *secret) sum(id string) string {
	h := hmac.New(sha256.New, s.mac[:])
	h.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// verify reports whether v is a MarkerHeader value this process signed.
func (s *secret) verify(v string) bool {
	i := strings.LastIndex(v, sigSep)
	if i < 0 {
		return false
	}
	return hmac.Equal([]byte(v[i+len(sigSep):]), []byte(s.sum(v[:i])))
}

// MirrorOf returns the live request id a MarkerHeader value names (the value without its
// signature).
func MirrorOf(v string) string {
	if i := strings.LastIndex(v, sigSep); i >= 0 {
		return v[:i]
	}
	return v
}
