// Package tenant names the tenant of a request: who a request is billed to, taken from where a
// deployment says it is (a request header, a value a verifying module set, or the API key the
// client sent). A tenant is a label llmtap puts on records and counters, so what comes from a
// client is bounded here: a value is cut to labelcap.MaxLen bytes (with a hash suffix, see
// labelcap.Shorten), and an API key is never used itself but only as a keyed hash of it.
//
// The package knows nothing of HTTP servers or Caddy: it reads an http.Header.
package tenant

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmtap/llmtap/internal/sensitive"
	"github.com/llmtap/llmtap/telemetry/labelcap"
)

// Sources of a tenant.
const (
	// SourceHeader takes the tenant from a request header the deployment trusts (set by an
	// authenticating gateway in front, never one any client may set to anything).
	SourceHeader = "header"
	// SourcePlaceholder takes it from a value another module set for the request (a JWT claim
	// of a module that verified the token); the Caddy layer resolves it.
	SourcePlaceholder = "placeholder"
	// SourceAPIKey takes it from the API key the request carries, as a keyed hash (KeyID).
	SourceAPIKey = "api_key"
)

// KeyPrefix starts every tenant derived from an API key, so such a tenant never reads as a
// name a header could have given.
const KeyPrefix = "key:"

// keyHexDigits is how many hex digits of the keyed hash a key's tenant keeps: 64 bits, so two
// keys of one deployment share a tenant with a chance of about n²/2⁶⁵ among n keys.
const keyHexDigits = 16

// MinKeyLen is the shortest secret KeyID accepts, in bytes.
const MinKeyLen = 16

// Bound returns v cut to labelcap.MaxLen bytes of valid UTF-8 (labelcap.Shorten), with
// surrounding white space removed; "" stays "".
func Bound(v string) string {
	return labelcap.Shorten(strings.TrimSpace(v))
}

// APIKey returns the API key a request carries: the token of an "Authorization: Bearer"
// header, else the value of x-api-key (OpenAI-compatible servers, Anthropic), api-key (Azure
// OpenAI) or x-goog-api-key (Gemini), the first present; "" when there is none. Basic
// credentials are not an API key (their user name is not secret, their password is; neither
// names a tenant alone) and give "".
func APIKey(h http.Header) string {
	if a := h.Get("Authorization"); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:])
		}
	}
	for _, name := range [...]string{"X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// KeyID returns the tenant of API key k under secret: KeyPrefix and the first 16 hex digits
// of HMAC-SHA256(secret, k). The key cannot be recovered from it, nor confirmed by guessing
// without the secret; instances given the same secret name the same key alike. "" when k is
// empty.
func KeyID(secret []byte, k string) string {
	if k == "" {
		return ""
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(k))
	var sum [sha256.Size]byte
	b := make([]byte, 0, len(KeyPrefix)+keyHexDigits)
	b = append(b, KeyPrefix...)
	return string(hex.AppendEncode(b, mac.Sum(sum[:0])[:keyHexDigits/2]))
}

// Check reports what is wrong with the tenant source from, named name: a header name for
// SourceHeader (not one that may carry credentials), a placeholder ("{…}") for
// SourcePlaceholder, nothing for SourceAPIKey.
func Check(from, name string) error {
	switch from {
	case SourceHeader:
		if name == "" {
			return fmt.Errorf("tenant header: name the header")
		}
		if sensitive.Header(name) {
			return fmt.Errorf("tenant header %q may carry credentials, which never become labels; use tenant api_key to bill by API key", name)
		}
	case SourcePlaceholder:
		if !strings.HasPrefix(name, "{") || !strings.HasSuffix(name, "}") {
			return fmt.Errorf("tenant placeholder: %q is not a placeholder; expected one such as {http.auth.user.id}", name)
		}
	case SourceAPIKey:
		if name != "" {
			return fmt.Errorf("tenant api_key takes no name (got %q)", name)
		}
	default:
		return fmt.Errorf("tenant: from %q is not a source; expected header, placeholder or api_key", from)
	}
	return nil
}

// Source names the tenant of a request from one source.
type Source struct {
	header      string
	placeholder string
	key         []byte // SourceAPIKey
}

// NewSource makes the Source from, named name (see Check); key is the secret of KeyID, needed
// by SourceAPIKey only.
func NewSource(from, name string, key []byte) (*Source, error) {
	if err := Check(from, name); err != nil {
		return nil, err
	}
	switch from {
	case SourceHeader:
		return &Source{header: http.CanonicalHeaderKey(name)}, nil
	case SourcePlaceholder:
		return &Source{placeholder: name}, nil
	}
	return &Source{key: key}, nil
}

// Of returns the bounded tenant of a request with headers h; resolve replaces a placeholder
// with its value for the request ("" when unknown). A nil Source names no tenant.
func (s *Source) Of(h http.Header, resolve func(placeholder string) string) string {
	switch {
	case s == nil:
		return ""
	case s.header != "":
		return Bound(h.Get(s.header))
	case s.placeholder != "":
		return Bound(resolve(s.placeholder))
	default:
		return KeyID(s.key, APIKey(h))
	}
}
