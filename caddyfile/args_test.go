package caddyfile

import (
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// sampled is what sample reads.
type sampled struct {
	frac float64
	seed uint64
}

// TestArgs reads option lines with each kind of the toolkit: values in range, values out of
// range, missing and extra values, and the exact message (with its position) of each refusal.
func TestArgs(t *testing.T) {
	// Each reader runs the toolkit on the option the dispenser is on, inside block "blk".
	oneText := func(o *option) (any, error) { return one(o, text("")) }
	oneOff := func(o *option) (any, error) { return one(o, oneOf("a", "b", "c")) }
	nonNeg := func(o *option) (any, error) { return one(o, integer(0, maxInt, "")) }
	records := func(o *option) (any, error) { return one(o, integer(1, maxInt, "records")) }
	twoToTen := func(o *option) (any, error) { return one(o, integer(2, 10, "")) }
	atLeast5 := func(o *option) (any, error) { return one(o, integer(5, maxInt, "")) }
	closed := func(o *option) (any, error) { return one(o, fraction(false)) }
	open := func(o *option) (any, error) { return one(o, fraction(true)) }
	small := func(o *option) (any, error) { return one(o, handlerSize) }
	large := func(o *option) (any, error) { return one(o, recordSize) }
	smp := func(o *option) (any, error) {
		f, s, err := sample(o)
		return sampled{f, s}, err
	}
	texts := func(o *option) (any, error) { return some(o, text("a header name")) }
	plain := func(o *option) (any, error) { return some(o, text("")) }
	statuses := func(o *option) (any, error) { return some(o, httpStatus) }
	offOrStatuses := func(o *option) (any, error) {
		if o.accept("off") {
			return "off", o.end()
		}
		return some(o, httpStatus)
	}
	ofKind := func(k any) func(o *option) (any, error) {
		switch k := k.(type) {
		case kind[bool]:
			return func(o *option) (any, error) { return one(o, k) }
		case kind[int]:
			return func(o *option) (any, error) { return one(o, k) }
		case kind[uint64]:
			return func(o *option) (any, error) { return one(o, k) }
		case kind[float64]:
			return func(o *option) (any, error) { return one(o, k) }
		case kind[caddy.Duration]:
			return func(o *option) (any, error) { return one(o, k) }
		}
		panic("no such kind")
	}
	flag := func(o *option) (any, error) { return o.flag() }
	// Readers of a block's own line (the block is "x").
	keyword := func(o *option) (any, error) { o.head, o.name = true, "x"; return o.keyword("off") }
	noArgs := func(o *option) (any, error) { o.head, o.name = true, "x"; return nil, o.end() }
	headText := func(o *option) (any, error) {
		o.head, o.name = true, "x"
		v, _, err := maybe(o, text("a folder"))
		if err != nil {
			return nil, err
		}
		return v, o.end()
	}

	tests := []struct {
		why   string
		line  string
		read  func(*option) (any, error)
		want  any    // the value read, when no error
		error string // the message, without its position (", at Testfile:1")
	}{
		{"a text is any token", "x hello", oneText, "hello", ""},
		{"a quoted text keeps its spaces", `x "a b"`, oneText, "a b", ""},
		{"a missing text", "x", oneText, nil, "blk x needs a value"},
		{"a value on the next line is not the option's", "x\ny", oneText, nil, "blk x needs a value"},
		{"a block opening is not a value", "x {\n}", oneText, nil, "blk x needs a value"},
		{"a text too many", "x a b", oneText, nil, `blk x takes one value, got another: "b"`},

		{"one of the words", "x b", oneOff, "b", ""},
		{"a word not in the list", "x d", oneOff, nil, `blk x: "d" is not one of a, b or c`},
		{"a missing word says which", "x", oneOff, nil, "blk x needs one of a, b or c"},

		{"on", "x on", ofKind(onOff), true, ""},
		{"true is on", "x true", ofKind(onOff), true, ""},
		{"off", "x off", ofKind(onOff), false, ""},
		{"false is off", "x false", ofKind(onOff), false, ""},
		{"neither on nor off", "x maybe", ofKind(onOff), nil, `blk x: "maybe" is not on or off`},

		{"zero is non-negative", "x 0", nonNeg, 0, ""},
		{"a negative integer", "x -1", nonNeg, nil, `blk x: "-1" is not a non-negative integer`},
		{"a fraction is no integer", "x 1.5", nonNeg, nil, `blk x: "1.5" is not a non-negative integer`},
		{"a positive count", "x 7", records, 7, ""},
		{"zero is not positive", "x 0", records, nil, `blk x: "0" is not a positive number of records`},
		{"a missing count names its unit", "x", records, nil, "blk x needs a positive number of records"},
		{"the top of a closed range", "x 10", twoToTen, 10, ""},
		{"above the range", "x 11", twoToTen, nil, `blk x: "11" is not an integer from 2 to 10`},
		{"below the range", "x 1", twoToTen, nil, `blk x: "1" is not an integer from 2 to 10`},
		{"below a lower bound", "x 4", atLeast5, nil, `blk x: "4" is not an integer of at least 5`},

		{"an HTTP status", "x 429", ofKind(httpStatus), 429, ""},
		{"below the statuses", "x 99", ofKind(httpStatus), nil, `blk x: "99" is not an HTTP status`},
		{"above the statuses", "x 600", ofKind(httpStatus), nil, `blk x: "600" is not an HTTP status`},

		{"the largest seed", "x 18446744073709551615", ofKind(seed), uint64(1<<64 - 1), ""},
		{"a negative seed", "x -1", ofKind(seed), nil, `blk x: "-1" is not a non-negative integer`},

		{"a non-negative number", "x 2.5", ofKind(nonNegative), 2.5, ""},
		{"zero", "x 0", ofKind(nonNegative), 0.0, ""},
		{"below zero", "x -0.1", ofKind(nonNegative), nil, `blk x: "-0.1" is not a non-negative number`},
		{"NaN cannot be written as JSON", "x NaN", ofKind(nonNegative), nil, `blk x: "NaN" is not a non-negative number`},
		{"infinity cannot be written as JSON", "x Inf", ofKind(nonNegative), nil, `blk x: "Inf" is not a non-negative number`},

		{"zero is in [0, 1]", "x 0", closed, 0.0, ""},
		{"0% is in [0, 1]", "x 0%", closed, 0.0, ""},
		{"100% is 1", "x 100%", closed, 1.0, ""},
		{"above one", "x 1.01", closed, nil, `blk x: "1.01" is not a fraction in [0, 1] (0.1 or 10%)`},
		{"a percentage above 100", "x 150%", closed, nil, `blk x: "150%" is not a fraction in [0, 1] (0.1 or 10%)`},
		{"below zero", "x -0.1", closed, nil, `blk x: "-0.1" is not a fraction in [0, 1] (0.1 or 10%)`},
		{"NaN is no fraction", "x NaN", closed, nil, `blk x: "NaN" is not a fraction in [0, 1] (0.1 or 10%)`},
		{"zero is not in (0, 1]", "x 0", open, nil, `blk x: "0" is not a fraction in (0, 1] (0.1 or 10%)`},
		{"a small percentage", "x 0.5%", open, 0.005, ""},
		{"one is in (0, 1]", "x 1", open, 1.0, ""},
		{"a missing fraction says its range", "x", open, nil, "blk x needs a fraction in (0, 1] (0.1 or 10%)"},

		{"a duration", "x 250ms", ofKind(duration), caddy.Duration(250 * time.Millisecond), ""},
		{"days are Caddy durations", "x 1d", ofKind(duration), caddy.Duration(24 * time.Hour), ""},
		{"zero is no positive duration", "x 0s", ofKind(duration), nil, `blk x: "0s" is not a positive duration, such as 250ms or 1s`},
		{"a negative duration", "x -1s", ofKind(duration), nil, `blk x: "-1s" is not a positive duration, such as 250ms or 1s`},
		{"not a duration", "x soon", ofKind(duration), nil, `blk x: "soon" is not a positive duration, such as 250ms or 1s`},
		{"a missing duration", "x", ofKind(duration), nil, "blk x needs a duration, such as 250ms or 1s"},

		{"one byte", "x 1", small, int64(1), ""},
		{"binary units", "x 64KiB", small, int64(65536), ""},
		{"decimal units", "x 1MB", small, int64(1000000), ""},
		{"the top of the handler's sizes", "x 2GiB", small, int64(1 << 31), ""},
		{"a byte over the top", "x 2147483649", small, nil, `blk x must be between 1 byte and 2GiB, got "2147483649"`},
		{"zero bytes", "x 0", small, nil, `blk x must be between 1 byte and 2GiB, got "0"`},
		{"not a size", "x lots", small, nil, `blk x: "lots" is not a size; expected a number of bytes with an optional unit, such as 1MiB or 65536`},
		{"a missing size", "x", small, nil, "blk x needs a size, such as 1MiB or 65536"},
		{"a size too many", "x 1MiB 2MiB", small, nil, `blk x takes one value, got another: "2MiB"`},
		{"a record size above 2GiB", "x 3GiB", large, int64(3 << 30), ""},
		{"zero bytes in a record size", "x 0", large, nil, `blk x must be between 1 byte and 4EiB, got "0"`},

		{"a sample without a seed", "x 0.1", smp, sampled{0.1, 0}, ""},
		{"a sample with a seed", "x 10% 7", smp, sampled{0.1, 7}, ""},
		{"a sample of zero", "x 0", smp, nil, `blk x: "0" is not a fraction in (0, 1] (0.1 or 10%)`},
		{"a seed that is not one", "x 0.1 -1", smp, nil, `blk x: "-1" is not a non-negative integer`},
		{"a value after the seed", "x 0.1 1 2", smp, nil, `blk x takes at most 2 values, got another: "2"`},
		{"a missing sample", "x", smp, nil, "blk x needs a fraction in (0, 1] (0.1 or 10%)"},

		{"a flag", "x", flag, true, ""},
		{"a flag with a value", "x yes", flag, nil, `blk x takes no value, got "yes"`},

		{"a list", "x a b", plain, []string{"a", "b"}, ""},
		{"an empty list", "x", plain, nil, "blk x needs at least one value"},
		{"an empty list names its items", "x", texts, nil, "blk x needs at least one header name"},
		{"a list of statuses", "x 429 503", statuses, []int{429, 503}, ""},
		{"a bad item in a list", "x 429 abc", statuses, nil, `blk x: "abc" is not an HTTP status`},
		{"a word instead of a list", "x off", offOrStatuses, "off", ""},
		{"the word takes nothing after it", "x off 429", offOrStatuses, nil, `blk x takes one value, got another: "429"`},
		{"the word is only read first", "x 429 off", offOrStatuses, nil, `blk x: "off" is not an HTTP status`},

		{"a keyword", "x off", keyword, true, ""},
		{"no keyword", "x", keyword, false, ""},
		{"no keyword before a block", "x {\n}", keyword, false, ""},
		{"another word than the keyword", "x on", keyword, nil, `x takes no argument but off, got "on"`},
		{"a value after the keyword", "x off now", keyword, nil, `x takes one argument on its line, got another: "now"; put options in a block`},
		{"a block's line without arguments", "x {\n}", noArgs, nil, ""},
		{"an argument on a block's line", "x on {\n}", noArgs, nil, `x takes no arguments on its line (got "on"); put options in a block`},
		{"an optional argument on a block's line", "x /r", headText, "/r", ""},
		{"no optional argument", "x", headText, "", ""},
		{"one argument too many on a block's line", "x /a /b", headText, nil, `x takes one argument on its line, got another: "/b"; put options in a block`},
	}
	for _, tt := range tests {
		t.Run(tt.why, func(t *testing.T) {
			d := caddyfile.NewTestDispenser(tt.line)
			d.Next()
			got, err := tt.read(opt(d, "blk"))
			if tt.error != "" {
				if want := tt.error + ", at Testfile:1"; err == nil || err.Error() != want {
					t.Fatalf("%q: error %v, want %q", tt.line, err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.line, err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%q: read %#v, want %#v", tt.line, got, tt.want)
			}
		})
	}
}

// TestByteCount checks the sizes the range messages name.
func TestByteCount(t *testing.T) {
	for n, want := range map[uint64]string{1: "1 byte", 1000: "1000B", 1 << 16: "64KiB", 1 << 31: "2GiB", 1 << 62: "4EiB", 3 << 20: "3MiB", 1<<20 + 1: "1048577B"} {
		if got := byteCount(n); got != want {
			t.Errorf("byteCount(%d) = %q, want %q", n, got, want)
		}
	}
}
