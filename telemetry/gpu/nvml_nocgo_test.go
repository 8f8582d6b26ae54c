//go:build !cgo || !linux

package gpu

import (
	"errors"
	"testing"
)

// TestOpenWithoutCgo checks the cgo-free fallback: GPU sampling reports
// ErrNoNVML instead of failing to build or crashing.
func TestOpenWithoutCgo(t *testing.T) {
	src, err := Open()
	if src != nil || !errors.Is(err, ErrNoNVML) {
		t.Fatalf("Open() = %v, %v; want nil and ErrNoNVML", src, err)
	}
}
