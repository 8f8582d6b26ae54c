// Package pngcheck checks that a file is a PNG image of a given size with something drawn on
// it, for the tests of the report's chart images.
package pngcheck

import (
	"fmt"
	"image"
	"image/png"
	"os"
)

// Check decodes file as a PNG and returns an error unless it is w×h pixels with at least
// three distinct colors (a background, a line and text at the least).
func Check(file string, w, h int) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		return fmt.Errorf("%s is %dx%d, want %dx%d", file, b.Dx(), b.Dy(), w, h)
	}
	if n := colors(img, 3); n < 3 {
		return fmt.Errorf("%s has %d colors: nothing was drawn", file, n)
	}
	return nil
}

// colors counts the distinct colors of img, up to limit.
func colors(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}
