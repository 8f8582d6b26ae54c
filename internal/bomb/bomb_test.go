package bomb

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestGzip(t *testing.T) {
	b := Gzip(3)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n != 3<<20 {
		t.Fatalf("decoded %d bytes (%v), want 3 MiB", n, err)
	}
	if ratio := n / int64(len(b)); ratio < 900 {
		t.Errorf("ratio %d:1, want deflate's best (about 1000:1)", ratio)
	}
}
