// Package sensitive says which HTTP headers and URL query parameters may carry credentials.
// llmtap never records them, and never forwards them to a mirror upstream (headers unless the
// configuration names them; query parameters never).
package sensitive

import (
	"net/url"
	"strings"
)

// headerWords are the parts of a header name that mark it as a credential carrier.
var headerWords = []string{
	"authorization", "cookie", "api-key", "api_key", "apikey", "token", "secret", "password",
	"session-key", "credential",
	"subscription-key", // Azure API Management: Ocp-Apim-Subscription-Key
	"functions-key",    // Azure Functions: X-Functions-Key
	"access-key", "secret-key", "private-key",
}

// Header reports whether a header named name may carry credentials, compared
// case-insensitively: Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key,
// Api-Key, Ocp-Apim-Subscription-Key, X-Functions-Key, and any name with "token", "secret",
// "password" or "credential" in it (X-Amz-Security-Token, X-Goog-Credential, …). A header of
// a name only a deployment knows (X-Tenant-Signature) is not matched: llmtap records no
// header but the session header, and a mirror forwards it (header_up can remove it).
func Header(name string) bool {
	return containsAny(strings.ToLower(name), headerWords)
}

// queryWords are the parts of a query parameter name that mark it as a credential carrier.
var queryWords = []string{
	"api_key", "api-key", "apikey", "token", "secret", "password", "passwd", "credential",
	"signature", "authorization", "cookie", "accesskey", "access_key", "access-key",
	"subscription-key", "subscription_key", "private_key", "private-key",
}

// queryNames are query parameter names that carry credentials as a whole name, too short or
// common to be looked for inside other names.
var queryNames = []string{
	"key", // Google APIs (Gemini: ?key=)
	"sig", // Azure shared access signatures
	"auth", "code", "jwt", "pwd", "session", "sid",
	"key-pair-id", "googleaccessid", // CloudFront and Google Cloud Storage signed URLs
}

// queryPrefixes start the names of signed-URL parameters, all of them treated as credentials:
// AWS SigV4 (X-Amz-Credential, X-Amz-Signature, X-Amz-Security-Token, …) and Google Cloud
// Storage V4 (X-Goog-Credential, X-Goog-Signature, …).
var queryPrefixes = []string{"x-amz-", "x-goog-"}

// Query reports whether a URL query parameter named name (as decoded from the query) may carry
// credentials, compared case-insensitively: api_key, key, token, access_token,
// subscription-key, sig, signature, password, every X-Amz-* and X-Goog-* parameter, … (see
// the lists above).
func Query(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	if containsAny(n, queryWords) {
		return true
	}
	for _, s := range queryNames {
		if n == s {
			return true
		}
	}
	for _, p := range queryPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// StripQuery returns raw (a URL's encoded query) without the parameters Query flags, every
// other parameter kept byte for byte and in order, and how many were removed. A parameter's
// name is decoded before it is judged ("api%5Fkey" is "api_key"); a name that does not decode
// is judged as written. Parameters are split on '&', and a parameter that holds a ';' is
// removed when any ';'-separated part of it is flagged, since some servers split on ';' too.
func StripQuery(raw string) (string, int) {
	if raw == "" {
		return raw, 0
	}
	removed := 0
	var kept []string
	for p := range strings.SplitSeq(raw, "&") {
		if p != "" && queryPart(p) {
			removed++
			continue
		}
		kept = append(kept, p)
	}
	if removed == 0 {
		return raw, 0
	}
	return strings.Join(kept, "&"), removed
}

// queryPart reports whether one '&'-separated parameter carries a flagged name.
func queryPart(p string) bool {
	for q := range strings.SplitSeq(p, ";") {
		name, _, _ := strings.Cut(q, "=")
		if d, err := url.QueryUnescape(name); err == nil {
			name = d
		}
		if Query(name) {
			return true
		}
	}
	return false
}

// containsAny reports whether s contains one of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
