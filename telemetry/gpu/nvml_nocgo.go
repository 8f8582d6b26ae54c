//go:build !cgo || !linux

package gpu

import "fmt"

// Open reports ErrNoNVML: this binary was built without cgo (or not for
// Linux), and go-nvml needs cgo to load libnvidia-ml. GPU sampling is then
// off, and everything else in llmtap works.
func Open() (Source, error) {
	return nil, fmt.Errorf("%w: built without cgo NVML support", ErrNoNVML)
}
