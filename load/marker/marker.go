// Package marker signs and verifies the header that marks llmtap's own traffic (shadow load,
// trace replay) so that the measuring handler can tell it from live traffic.
//
// A mark is "<class>.<instance>.<load>.<expiry>.<nonce>.<tag>": the traffic class, the id of
// the Signer that made it (8 random bytes drawn when it is made, once per process in the proxy),
// the id of the load that minted it (LoadID of its name), its expiry in Unix seconds, 12
// random bytes, and the first 16 bytes of HMAC-SHA256 over everything before the tag, under
// the Signer's key. Only a holder of the key can produce a mark that verifies, so a client
// sending the header — by accident or to hide its traffic from the live figures — cannot pass
// as anything but live traffic.
//
// A mark is good once, for a short time: Verify refuses a mark past its expiry (TTL after it
// was made, default 10 s) and a mark whose nonce it has already accepted (it remembers the
// nonces of unexpired marks), so a mark copied from a log or a capture — after the request
// that carried it was measured — is refused as replayed, or as expired. The caller also checks
// the load: a mark of this instance whose load no longer runs is refused as expired. These
// outcomes are told apart (Forged, Expired, Replayed) so that a forger, a replayer and a clock
// problem show as different counts.
//
// Fleets: instances that share a key (Options.Key, from config or the environment) accept each
// other's marks; a mark of another instance is checked for its tag, expiry and nonce, not for
// its load, which only its own instance knows. The nonce memory is per instance, so a mark
// replayed to another instance of the fleet within its TTL is accepted once there.
package marker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header is the request header that carries the mark.
const Header = "Llmtap-Shadow"

// Defaults of Options' zero values.
const (
	DefaultTTL     = 10 * time.Second
	DefaultMaxSeen = 1 << 17
)

const (
	nonceLen    = 12
	tagLen      = 16
	instanceLen = 8
	loadLen     = 8
	// KeyLen is the length of a key.
	KeyLen = 32
)

var enc = base64.RawURLEncoding

// Result is what Verify found.
type Result int

const (
	// OK: the mark verifies, has not expired and was not seen before.
	OK Result = iota
	// Forged: not a mark of this key (malformed, another key, a changed field).
	Forged
	// Expired: a genuine mark past its expiry, or one further ahead than a fresh mark could be.
	Expired
	// Replayed: a genuine, unexpired mark whose nonce was already accepted.
	Replayed
)

// String names r as the counters do.
func (r Result) String() string {
	return [...]string{"ok", "forged", "expired", "replayed"}[r]
}

// Options configure a Signer. The zero value is usable.
type Options struct {
	// Key is the HMAC key; instances that share it accept each other's marks. Empty means a
	// fresh random key. Otherwise it must be KeyLen bytes.
	Key []byte
	// TTL is how long a mark stays good after it was made. Default DefaultTTL.
	TTL time.Duration
	// MaxSeen bounds the nonces remembered to refuse replays. Past it the oldest are forgotten
	// early (a replay of one of them within its TTL would pass): at most MaxSeen marks per TTL
	// are fully protected. Default DefaultMaxSeen.
	MaxSeen int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Signer makes and checks marks with one secret key. It is safe for concurrent use.
type Signer struct {
	key      [KeyLen]byte
	instance string
	ttl      time.Duration
	now      func() time.Time

	mu   sync.Mutex
	seen map[string]int64 // nonce -> expiry (Unix seconds)
	ring []seenEntry      // insertion order, for expiry and eviction
	head int
	max  int
}

type seenEntry struct {
	nonce string
	exp   int64
}

// New returns a Signer. The key, when given, must be KeyLen bytes.
func New(opts Options) (*Signer, error) {
	s := &Signer{ttl: opts.TTL, now: opts.Now, max: opts.MaxSeen, seen: map[string]int64{}}
	switch len(opts.Key) {
	case 0:
		rand.Read(s.key[:]) // never fails since Go 1.24: it crashes the program instead
	case KeyLen:
		copy(s.key[:], opts.Key)
	default:
		return nil, errKeyLen(len(opts.Key))
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.max <= 0 {
		s.max = DefaultMaxSeen
	}
	var ib [instanceLen]byte
	rand.Read(ib[:])
	s.instance = enc.EncodeToString(ib[:])
	return s, nil
}

type errKeyLen int

func (e errKeyLen) Error() string {
	return "the marker key is " + strconv.Itoa(int(e)) + " bytes; want " + strconv.Itoa(KeyLen)
}

// Instance is the id of this Signer, carried in its marks.
func (s *Signer) Instance() string { return s.instance }

// LoadID is the id a mark carries for the load named name.
func LoadID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return enc.EncodeToString(sum[:loadLen])
}

func (s *Signer) tag(body string) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(body))
	return m.Sum(nil)[:tagLen]
}

// Sign returns a fresh mark for class (a traffic class name without dots) minted by the load
// named load.
func (s *Signer) Sign(class, load string) string {
	var nb [nonceLen]byte
	rand.Read(nb[:])
	exp := s.now().Add(s.ttl).Unix()
	body := class + "." + s.instance + "." + LoadID(load) + "." + strconv.FormatInt(exp, 10) + "." + enc.EncodeToString(nb[:])
	return body + "." + enc.EncodeToString(s.tag(body))
}

// Mark is what a verified mark says.
type Mark struct {
	Class, Instance, Load string
}

// Own reports whether the mark was made by this Signer (then its load can be checked).
func (s *Signer) Own(m Mark) bool { return m.Instance == s.instance }

// maxLen bounds the header values Verify looks at: a class name of up to 32 bytes plus the
// other fields. Anything longer is not a mark, whatever it contains.
const maxLen = 32 + 1 + 11 + 1 + 11 + 1 + 12 + 1 + 16 + 1 + 22

// Verify checks v. A mark that verifies, has not expired and was not seen before is accepted
// (OK) and its nonce remembered until it expires; anything else is refused with the reason. The
// tag is compared in constant time, before anything else is believed.
func (s *Signer) Verify(v string) (Mark, Result) {
	if len(v) > maxLen {
		return Mark{}, Forged
	}
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return Mark{}, Forged
	}
	body, tag := v[:i], v[i+1:]
	f := strings.Split(body, ".")
	if len(f) != 5 || f[0] == "" || len(f[1]) != enc.EncodedLen(instanceLen) || len(f[2]) != enc.EncodedLen(loadLen) ||
		len(f[4]) != enc.EncodedLen(nonceLen) {
		return Mark{}, Forged
	}
	got, err := enc.DecodeString(tag)
	if err != nil || len(got) != tagLen || !hmac.Equal(got, s.tag(body)) {
		return Mark{}, Forged
	}
	m := Mark{Class: f[0], Instance: f[1], Load: f[2]}
	exp, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return m, Forged // signed, yet not a mark this package makes
	}
	now := s.now().Unix()
	if now >= exp || exp > now+int64(s.ttl/time.Second)+2 {
		return m, Expired // past its time, or made by a clock far ahead
	}
	if !s.remember(f[4], exp, now) {
		return m, Replayed
	}
	return m, OK
}

// remember records nonce until exp, reporting false when it is already there.
func (s *Signer) remember(nonce string, exp, now int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.seen[nonce]; ok && e > now {
		return false
	}
	// Forget what expired, oldest first, then the oldest when full.
	for s.head < len(s.ring) && (s.ring[s.head].exp <= now || len(s.ring)-s.head >= s.max) {
		if e := s.ring[s.head]; s.seen[e.nonce] == e.exp {
			delete(s.seen, e.nonce)
		}
		s.ring[s.head] = seenEntry{}
		s.head++
	}
	if s.head > len(s.ring)/2 && s.head > 64 {
		s.ring = append(s.ring[:0], s.ring[s.head:]...)
		s.head = 0
	}
	s.seen[nonce] = exp
	s.ring = append(s.ring, seenEntry{nonce, exp})
	return true
}
