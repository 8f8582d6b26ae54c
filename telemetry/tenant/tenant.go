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
	"net/http"
	"strings"

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
