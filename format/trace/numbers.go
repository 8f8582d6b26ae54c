package trace

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/internal/limits"
)

// maxCount bounds token counts (limits.MaxTokens, the largest context window served): a
// corrupt or hostile value is an error rather than a prompt that exhausts memory.
const maxCount = limits.MaxTokens

// errOverMax is wrapped by the error of a count over maxCount.
var errOverMax = fmt.Errorf("over the limit of %d tokens (limits.MaxTokens)", maxCount)

// errRange says a count is over maxCount, naming the limit.
func errRange(b []byte) error { return fmt.Errorf("%q is %w", b, errOverMax) }

var errEmpty = errors.New("empty value")

// parseCount reads a token count: a non-negative integer, also accepted in the integral float
// spelling ("6758.0") that pandas writes.
func parseCount(b []byte) (int, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, errEmpty
	}
	if n, ok := digits(b); ok {
		if n > maxCount {
			return 0, errRange(b)
		}
		return int(n), nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	switch {
	case err != nil || f != math.Trunc(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%q is not an integer", b)
	case f < 0:
		return 0, fmt.Errorf("%q is negative", b)
	case f > maxCount:
		return 0, errRange(b)
	}
	return int(f), nil
}

// digits parses an unsigned decimal integer made only of ASCII digits, without allocating.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseOffset reads a non-negative time offset written as a decimal number of units (seconds
// or milliseconds). Plain decimals are converted exactly (rounded half up at the nanosecond), so
// timestamps survive a round trip through a writer bit for bit; exponent spellings fall back to
// float arithmetic.
func parseOffset(b []byte, unit time.Duration) (time.Duration, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, errEmpty
	}
	intPart, frac := b, []byte(nil)
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		intPart, frac = b[:i], b[i+1:]
	}
	whole, okInt := digits(intPart)
	if len(intPart) == 0 && len(frac) > 0 {
		whole, okInt = 0, true
	}
	if okInt && allDigits(frac) {
		if whole > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("%q is out of range", b)
		}
		// f is the fraction in nanoseconds; scale is the value of the next digit.
		var f time.Duration
		scale := unit / 10
		for _, c := range frac {
			if scale == 0 {
				if c >= '5' {
					f++
				}
				break
			}
			f += time.Duration(c-'0') * scale
			scale /= 10
		}
		d := time.Duration(whole) * unit
		if d > math.MaxInt64-f {
			return 0, fmt.Errorf("%q is out of range", b)
		}
		return d + f, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%q is not a number", b)
	case f < 0:
		return 0, fmt.Errorf("%q is negative", b)
	case f*float64(unit) >= math.MaxInt64:
		return 0, fmt.Errorf("%q is out of range", b)
	}
	return time.Duration(math.Round(f * float64(unit))), nil
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// AppendMs writes d as decimal milliseconds, exactly: the integer part and up to six
// fractional digits with trailing zeros dropped ("1523", "1523.25", "0.000001").
func AppendMs(dst []byte, d time.Duration) []byte {
	if d < 0 {
		dst = append(dst, '-')
		d = -d
	}
	dst = strconv.AppendInt(dst, int64(d/time.Millisecond), 10)
	ns := int64(d % time.Millisecond)
	if ns == 0 {
		return dst
	}
	var frac [6]byte
	for i := 5; i >= 0; i-- {
		frac[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 6
	for n > 0 && frac[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, frac[:n]...)
}
