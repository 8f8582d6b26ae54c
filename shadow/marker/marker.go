// Package marker signs and verifies the header that marks llmtap's own traffic (shadow load,
// trace replay, mirror copies) so that the measuring handler can tell it from live traffic.
//
// A mark is "<class>.<nonce>.<tag>": the traffic class, 12 random bytes and the first 16 bytes
// of HMAC-SHA256 over "<class>.<nonce>" under a key drawn from crypto/rand when the Signer is
// made (once per process in the proxy). Only a process holding the key can produce a mark that
// verifies, so a client sending the header — by accident or to hide its traffic from the live
// figures — cannot pass as anything but live traffic. The nonce makes every mark different, so
// a mark seen in an upstream's logs says nothing about the next one; replaying a seen mark
// verifies (there is no nonce store) but the handler strips verified marks before proxying, so
// upstreams and their logs never see one.
package marker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Header is the request header that carries the mark.
const Header = "Llmtap-Shadow"

const (
	nonceLen = 12
	tagLen   = 16
)

var enc = base64.RawURLEncoding

// Signer makes and checks marks with one secret key. It is safe for concurrent use.
type Signer struct {
	key [32]byte
}

// New returns a Signer with a fresh random key.
func New() *Signer {
	s := &Signer{}
	rand.Read(s.key[:]) // never fails since Go 1.24: it crashes the program instead
	return s
}

// NewWithKey returns a Signer with the given key (tests, or instances that share marks).
func NewWithKey(key [32]byte) *Signer { return &Signer{key: key} }

func (s *Signer) tag(class, nonce string) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(class))
	m.Write([]byte{'.'})
	m.Write([]byte(nonce))
	return m.Sum(nil)[:tagLen]
}

// Sign returns a fresh mark for class (a traffic class name without dots).
func (s *Signer) Sign(class string) string {
	var nb [nonceLen]byte
	rand.Read(nb[:])
	nonce := enc.EncodeToString(nb[:])
	return class + "." + nonce + "." + enc.EncodeToString(s.tag(class, nonce))
}

// maxLen bounds the header values Verify looks at: a class name of up to 32 bytes plus the
// nonce and tag. Anything longer is not a mark, whatever it contains.
const maxLen = 32 + 1 + 16 + 1 + 22

// Verify reports the class of a mark made by this Signer, with ok false for anything else
// (another key, a changed class or nonce, a truncated or malformed value). The tag is
// compared in constant time.
func (s *Signer) Verify(v string) (class string, ok bool) {
	if len(v) > maxLen {
		return "", false
	}
	class, rest, ok1 := strings.Cut(v, ".")
	nonce, tag, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || class == "" || len(nonce) != enc.EncodedLen(nonceLen) {
		return "", false
	}
	got, err := enc.DecodeString(tag)
	if err != nil || len(got) != tagLen {
		return "", false
	}
	if !hmac.Equal(got, s.tag(class, nonce)) {
		return "", false
	}
	return class, true
}
