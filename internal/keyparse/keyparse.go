// Package keyparse reads secret keys given in the environment: hex or base64, within bounds on
// their length. One parser serves every key llmtap reads (LLMTAP_MARKER_KEY, LLMTAP_FLEET_KEY).
package keyparse

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Parse decodes a secret key given as hex or base64 (standard or URL alphabet, padded or
// not) of minLen to maxLen bytes (maxLen 0: no upper bound). Hex is tried first: a string of
// hex digits that decodes to an acceptable length is read as hex.
func Parse(v string, minLen, maxLen int) ([]byte, error) {
	ok := func(n int) bool { return n >= minLen && (maxLen == 0 || n <= maxLen) }
	want := fmt.Sprintf("%d bytes", minLen)
	if maxLen == 0 {
		want = "at least " + want
	} else if maxLen != minLen {
		want = fmt.Sprintf("%d to %d bytes", minLen, maxLen)
	}
	if b, err := hex.DecodeString(v); err == nil && ok(len(b)) {
		return b, nil
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := e.DecodeString(v); err == nil {
			if !ok(len(b)) {
				return nil, fmt.Errorf("the key is %d bytes; want %s", len(b), want)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("want %s in hex or base64", want)
}
