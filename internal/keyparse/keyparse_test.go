package keyparse

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts is within its bounds; a key it
// returns, written in hex, parses back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"000102030405060708090a0b0c0d0e0f", "YSBmbGVldC13aWRlIGtleSBvZiAzMiBieXRlcy4uLi4=", "", "=", "zz", "c2hvcnQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, b := range [][2]int{{16, 0}, {32, 32}} {
			k, err := Parse(v, b[0], b[1])
			if err != nil {
				continue
			}
			if len(k) < b[0] || (b[1] > 0 && len(k) > b[1]) {
				t.Fatalf("Parse(%q, %d, %d) = %d bytes", v, b[0], b[1], len(k))
			}
			if k2, err := Parse(hex.EncodeToString(k), b[0], b[1]); err != nil || !bytes.Equal(k, k2) {
				t.Fatalf("hex of %x parsed as %x, %v", k, k2, err)
			}
		}
	})
}
