package gpu

import (
	"fmt"
	"math/bits"
	"strings"
)

var fieldNames = [...]string{
	"power", "energy", "util", "memory", "temp", "sm_clock", "mem_clock", "throttle",
}

// String names the fields in f joined by "|", for error messages and logs.
func (f Field) String() string {
	if f == 0 {
		return "none"
	}
	if bits.OnesCount16(uint16(f)) == 1 && bits.TrailingZeros16(uint16(f)) < len(fieldNames) {
		return fieldNames[bits.TrailingZeros16(uint16(f))]
	}
	var b strings.Builder
	for i, name := range fieldNames {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := f &^ FieldAll; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "%#x", uint16(rest))
	}
	return b.String()
}

// FieldError is a reading that failed on one GPU for a reason other than the
// GPU not supporting it. Its message names the GPU and the field, so that
// identical failures on consecutive polls compare equal and are reported once.
type FieldError struct {
	// Index is the NVML device index.
	Index int
	// Field is the reading that failed.
	Field Field
	// Err is the driver's error (an nvml.Return in the NVML source).
	Err error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("gpu %d: reading %s: %v", e.Index, e.Field, e.Err)
}

// Unwrap returns the driver's error, so errors.Is can match nvml.Return
// values and ErrNoNVML.
func (e *FieldError) Unwrap() error { return e.Err }
