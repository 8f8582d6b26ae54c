package process

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/load/marker"
)

// TestParseMarkerKey: the fleet key is 32 bytes in hex or any base64 alphabet; anything else is
// an error that says what is wanted.
func TestParseMarkerKey(t *testing.T) {
	key := []byte(strings.Repeat("\xfbk", 16))
	for _, v := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key)} {
		if got, err := keyparse.Parse(v, marker.KeyLen, marker.KeyLen); err != nil || string(got) != string(key) {
			t.Errorf("keyparse.Parse(%q) = %x, %v", v, got, err)
		}
	}
	for _, v := range []string{"secret", hex.EncodeToString(key[:16]), base64.StdEncoding.EncodeToString(key[:31])} {
		if _, err := keyparse.Parse(v, marker.KeyLen, marker.KeyLen); err == nil || !strings.Contains(err.Error(), "32") {
			t.Errorf("keyparse.Parse(%q): %v, want an error naming the 32 bytes wanted", v, err)
		}
	}
}
