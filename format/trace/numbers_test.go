package trace

import (
	"testing"
	"time"
)

func TestParseOffset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		unit time.Duration
		want time.Duration
		err  bool
		why  string
	}{
		{"5", time.Second, 5 * time.Second, false, "BurstGPT v1 whole seconds"},
		{"19440110.0", time.Second, 19440110 * time.Second, false, "BurstGPT v3 float seconds"},
		{"3052.5", time.Millisecond, 3052500 * time.Microsecond, false, "fractional milliseconds"},
		{".5", time.Second, 500 * time.Millisecond, false, "leading dot"},
		{"0.0000000015", time.Second, 2, false, "digits below a nanosecond round half up"},
		{"1.0000004", time.Millisecond, time.Millisecond, false, "sub-nanosecond digits of ms round down"},
		{"1e3", time.Millisecond, time.Second, false, "exponent spelling"},
		{" 7 ", time.Second, 7 * time.Second, false, "surrounding spaces"},
		{"-1", time.Second, 0, true, "negative"},
		{"", time.Second, 0, true, "empty"},
		{"1.2.3", time.Second, 0, true, "not a number"},
		{"NaN", time.Second, 0, true, "NaN"},
		{"99999999999999999", time.Second, 0, true, "overflows a Duration"},
	}
	for _, tc := range cases {
		got, err := parseOffset([]byte(tc.in), tc.unit)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseOffset(%q, %v) = %v, %v; want %v, error %v (%s)", tc.in, tc.unit, got, err, tc.want, tc.err, tc.why)
		}
	}
}

func TestParseCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int
		err  string
	}{
		{"4808", 4808, ""}, {"6758.0", 6758, ""}, {"0", 0, ""}, {" 12 ", 12, ""},
		{"abc", 0, `"abc" is not an integer`}, {"1.5", 0, `"1.5" is not an integer`},
		{"-3", 0, `"-3" is negative`}, {"1e12", 0, `"1e12" is over the limit of 2097152 tokens (limits.MaxTokens)`}, {"", 0, "empty value"},
	}
	for _, tc := range cases {
		got, err := parseCount([]byte(tc.in))
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("parseCount(%q) = %d, %v; want %d, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestAppendMs(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0", 1523 * time.Millisecond: "1523", 1523250 * time.Microsecond: "1523.25",
		1: "0.000001", -1500 * time.Microsecond: "-1.5",
	} {
		if got := string(AppendMs(nil, d)); got != want {
			t.Errorf("AppendMs(%d ns) = %s, want %s", d, got, want)
		}
	}
}
