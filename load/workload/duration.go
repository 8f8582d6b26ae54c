package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Duration is a span of time in a JSON config, read and written as Caddy's caddy.Duration is
// (without importing Caddy): an integer is nanoseconds, a string is a Go duration ("300ms",
// "1m30s") that may also use the unit "d" for 24 hours ("1d"); it is written as an integer of
// nanoseconds.
type Duration time.Duration

// UnmarshalJSON reads an integer of nanoseconds or a duration string (ParseDuration).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return io.EOF
	}
	var dur time.Duration
	var err error
	if b[0] == '"' && b[len(b)-1] == '"' {
		dur, err = ParseDuration(strings.Trim(string(b), `"`))
	} else {
		err = json.Unmarshal(b, &dur)
	}
	*d = Duration(dur)
	return err
}

// ParseDuration reads a Go duration string with one more unit, "d", a day of 24 hours
// ("1.5d", "1d12h"); at most 1024 bytes. It is caddy.ParseDuration's algorithm (Caddy v2,
// Apache-2.0): each run of number characters before a "d" is rewritten as hours.
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > 1024 {
		return 0, fmt.Errorf("parsing duration: input string too long")
	}
	var inNumber bool
	var numStart int
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == 'd' {
			days, err := strconv.ParseFloat(s[numStart:i], 64)
			if err != nil {
				return 0, err
			}
			s = s[:numStart] + strconv.FormatFloat(days*24, 'f', -1, 64) + "h" + s[i+1:]
			i--
			continue
		}
		if !inNumber {
			numStart = i
		}
		inNumber = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+'
	}
	return time.ParseDuration(s)
}
