package pngcheck

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, img image.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.png")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestCheck(t *testing.T) {
	flat := image.NewRGBA(image.Rect(0, 0, 20, 10))
	drawn := image.NewRGBA(image.Rect(0, 0, 20, 10))
	drawn.Set(1, 1, color.RGBA{255, 0, 0, 255})
	drawn.Set(2, 2, color.RGBA{0, 0, 255, 255})
	for _, tc := range []struct {
		name string
		file string
		w, h int
		want string // "" for no error
	}{
		{"drawn at the right size", write(t, drawn), 20, 10, ""},
		{"wrong size", write(t, drawn), 10, 10, "is 20x10"},
		{"one color", write(t, flat), 20, 10, "nothing was drawn"},
		{"not a PNG", func() string {
			p := filepath.Join(t.TempDir(), "x.png")
			os.WriteFile(p, []byte("GIF89a"), 0o600)
			return p
		}(), 20, 10, "png"},
	} {
		err := Check(tc.file, tc.w, tc.h)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
