// Package sensitive says which HTTP headers may carry credentials. llmtap never records them,
// and never forwards them to a mirror upstream unless the configuration names them.
package sensitive

import "strings"

// words are the parts of a header name that mark it as a credential carrier.
var words = []string{"authorization", "cookie", "api-key", "api_key", "apikey", "token", "secret", "password", "session-key"}

// Header reports whether a header named name may carry credentials: Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key, Api-Key, anything with "token",
// "secret" or "password" in its name, compared case-insensitively.
func Header(name string) bool {
	n := strings.ToLower(name)
	for _, s := range words {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
