// Package bomb makes decompression bombs for tests: small encoded bodies that decode to a great
// deal, at the highest ratio their coding allows.
package bomb

import (
	"bytes"
	"compress/gzip"
)

// Gzip returns a gzip body that decodes to members MiB of zeros: members gzip members of 1 MiB
// each, concatenated (a reader decodes consecutive members as one stream), each at deflate's
// best ratio, about 1000:1 (a member is about 1 KiB).
func Gzip(members int) []byte {
	var one bytes.Buffer
	zw, err := gzip.NewWriterLevel(&one, gzip.BestCompression)
	if err != nil {
		panic(err) // BestCompression is a valid level
	}
	// Writes to a bytes.Buffer do not fail.
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	return bytes.Repeat(one.Bytes(), members)
}
