package caddyfile

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"github.com/llmtap/llmtap/internal/limits"
)

// This file is the argument toolkit every parser of the package reads values with, so that the
// same kind of value is refused with the same words wherever it appears, through the Dispenser
// (the error names the file and line). An option's values are the tokens after its name on its
// line; the messages are:
//
//	<option> needs <noun>                          no value where one is needed
//	<option>: "<value>" is not <what>              a value that cannot be read or is out of range
//	<option> must be between <low> and <high>, got "<value>"   a size out of its range
//	<option> takes no value, got "<value>"         a value too many (one value, at most N values)
//	<option> needs at least one <noun>             an empty list
//	<block> takes no arguments on its line (got "<value>"); put options in a block
//	<block> takes one argument on its line, got another: "<value>"; put options in a block
//
// where <option> is the option's name after the name of the block it is in ("record queue").

// maxInt is the upper bound of an integer option that has none.
const maxInt = math.MaxInt

// option reads the values of the option the Dispenser is on.
type option struct {
	d    *caddyfile.Dispenser
	word string // the option's name in the Caddyfile: "queue"
	name string // the option as messages name it: "record queue", "max_event_size"
	head bool   // the option opens a block: extra values belong in it
	n    int    // values read so far
}

// opt starts reading the option the Dispenser is on, inside block ("" at the top of a
// directive).
func opt(d *caddyfile.Dispenser, block string) *option {
	name := d.Val()
	if block != "" {
		name = block + " " + name
	}
	return &option{d: d, word: d.Val(), name: name}
}

// errUnknown is what a block's read function returns for an option it does not know.
var errUnknown = errors.New("unknown option")

// options reads each option of the block that opens on the Dispenser's line with read, which
// returns errUnknown for an option it does not know; that is refused naming the options
// expected. Options are named after the block in messages ("record queue") unless top (the
// options of a directive). A parser may store the config it fills before reading its options:
// an error discards the whole Caddyfile.
func options(d *caddyfile.Dispenser, block string, top bool, expected string, read func(o *option) error) error {
	prefix := block
	if top {
		prefix = ""
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		err := read(opt(d, prefix))
		if errors.Is(err, errUnknown) {
			return d.Errf("unknown %s option %q; expected %s", block, d.Val(), expected)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// head starts reading the values on the line of a block's name (a directive, or an option that
// opens a block).
func head(d *caddyfile.Dispenser) *option { return &option{d: d, name: d.Val(), head: true} }

// kind is one kind of value: what a message calls it and how to read it.
type kind[T any] struct {
	noun string                   // what the option needs, said when the value is missing
	read func(string) (T, string) // the value, or why it is refused: the message after the option's name
}

// notA is the reason a value that is not what it should be is refused.
func notA(s, what string) string { return fmt.Sprintf(": %q is not %s", s, what) }

// next reads the option's next value, which must be there.
func next[T any](o *option, k kind[T]) (T, error) {
	var zero T
	if !o.d.NextArg() {
		return zero, o.d.Errf("%s needs %s", o.name, k.noun)
	}
	o.n++
	v, why := k.read(o.d.Val())
	if why != "" {
		return zero, o.d.Errf("%s%s", o.name, why)
	}
	return v, nil
}

// maybe reads the option's next value if there is one.
func maybe[T any](o *option, k kind[T]) (v T, ok bool, err error) {
	if !o.d.NextArg() {
		return v, false, nil
	}
	o.d.Prev()
	v, err = next(o, k)
	return v, err == nil, err
}

// one reads the option's only value.
func one[T any](o *option, k kind[T]) (T, error) {
	v, err := next(o, k)
	if err != nil {
		return v, err
	}
	return v, o.end()
}

// some reads the option's values, one or more of kind k.
func some[T any](o *option, k kind[T]) ([]T, error) {
	var vs []T
	for o.d.NextArg() {
		o.d.Prev()
		v, err := next(o, k)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		item := "value"
		if a, ok := strings.CutPrefix(k.noun, "a "); ok {
			item = a
		} else if an, ok := strings.CutPrefix(k.noun, "an "); ok {
			item = an
		}
		return nil, o.d.Errf("%s needs at least one %s", o.name, item)
	}
	return vs, nil
}

// end checks that the option has no more values than were read. On a block's line, what
// follows belongs in the block.
func (o *option) end() error {
	if !o.d.NextArg() {
		return nil
	}
	switch {
	case o.head && o.n == 0:
		return o.d.Errf("%s takes no arguments on its line (got %q); put options in a block", o.name, o.d.Val())
	case o.head:
		return o.d.Errf("%s takes one argument on its line, got another: %q; put options in a block", o.name, o.d.Val())
	case o.n == 0:
		return o.d.Errf("%s takes no value, got %q", o.name, o.d.Val())
	case o.n == 1:
		return o.d.Errf("%s takes one value, got another: %q", o.name, o.d.Val())
	}
	return o.d.Errf("%s takes at most %d values, got another: %q", o.name, o.n, o.d.Val())
}

// flag reads an option that takes no value: present, it is on.
func (o *option) flag() (bool, error) { return true, o.end() }

// accept reads the next value if it is word, reporting whether it was.
func (o *option) accept(word string) bool {
	if !o.d.NextArg() {
		return false
	}
	if o.d.Val() == word {
		o.n++
		return true
	}
	o.d.Prev()
	return false
}

// keyword reads the optional keyword word (such as off), the only value the option takes,
// reporting whether it was given.
func (o *option) keyword(word string) (bool, error) {
	if o.accept(word) {
		return true, o.end()
	}
	if o.d.NextArg() {
		return false, o.d.Errf("%s takes no argument but %s, got %q", o.name, word, o.d.Val())
	}
	return false, nil
}

// text is any string; noun says what it is ("a value" when empty).
func text(noun string) kind[string] {
	if noun == "" {
		noun = "a value"
	}
	return kind[string]{noun: noun, read: func(s string) (string, string) { return s, "" }}
}

// oneOf is one of the given words.
func oneOf(words ...string) kind[string] {
	what := "one of " + words[0]
	if n := len(words); n > 1 {
		what = "one of " + strings.Join(words[:n-1], ", ") + " or " + words[n-1]
	}
	return kind[string]{noun: what, read: func(s string) (string, string) {
		for _, w := range words {
			if s == w {
				return s, ""
			}
		}
		return "", notA(s, what)
	}}
}

// onOff is on or off (true or false also read).
var onOff = kind[bool]{noun: "on or off", read: func(s string) (bool, string) {
	switch s {
	case "on", "true":
		return true, ""
	case "off", "false":
		return false, ""
	}
	return false, notA(s, "on or off")
}}

// integer is a whole number from lo to hi (hi math.MaxInt: no upper bound), of unit ("" for a
// plain integer).
func integer(lo, hi int, unit string) kind[int] {
	what := "an integer"
	if unit != "" {
		what = "a number of " + unit
	}
	switch {
	case hi != math.MaxInt:
		what = fmt.Sprintf("%s from %d to %d", what, lo, hi)
	case lo == 0:
		what = "a non-negative " + strings.TrimPrefix(strings.TrimPrefix(what, "a "), "an ")
	case lo == 1:
		what = "a positive " + strings.TrimPrefix(strings.TrimPrefix(what, "a "), "an ")
	default:
		what = fmt.Sprintf("%s of at least %d", what, lo)
	}
	return kind[int]{noun: what, read: func(s string) (int, string) {
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return 0, notA(s, what)
		}
		return n, ""
	}}
}

// httpStatus is an HTTP status code, 100 to 599.
var httpStatus = kind[int]{noun: "an HTTP status", read: func(s string) (int, string) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return 0, notA(s, "an HTTP status")
	}
	return n, ""
}}

// seed is a random seed: a non-negative 64-bit integer.
var seed = kind[uint64]{noun: "a non-negative integer", read: func(s string) (uint64, string) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, notA(s, "a non-negative integer")
	}
	return n, ""
}}

// nonNegative is a finite number of zero or more (fractions allowed).
var nonNegative = kind[float64]{noun: "a non-negative number", read: func(s string) (float64, string) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, notA(s, "a non-negative number")
	}
	return f, ""
}}

// money is an amount (a list price per million tokens, a price per GPU-hour): a finite
// number from 0 to limits.MaxPrice.
var money = kind[float64]{noun: "a non-negative number", read: func(s string) (float64, string) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, notA(s, "a non-negative number")
	}
	if f > limits.MaxPrice {
		return 0, notA(s, fmt.Sprintf("a price from 0 to %g (limits.MaxPrice)", float64(limits.MaxPrice)))
	}
	return f, ""
}}

// tokenLength is a token length: a finite number from 0 to limits.MaxTokens (fractions allowed: a
// mean or a standard deviation).
var tokenLength = kind[float64]{noun: fmt.Sprintf("a number of tokens from 0 to %d", limits.MaxTokens), read: func(s string) (float64, string) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= limits.MaxTokens) {
		return 0, notA(s, fmt.Sprintf("a number of tokens from 0 to %d (limits.MaxTokens)", limits.MaxTokens))
	}
	return f, ""
}}

// fraction is a number from 0 to 1, written 0.1 or 10%; openLow leaves 0 out ((0, 1] instead
// of [0, 1]).
func fraction(openLow bool) kind[float64] {
	what := "a fraction in [0, 1] (0.1 or 10%)"
	if openLow {
		what = "a fraction in (0, 1] (0.1 or 10%)"
	}
	return kind[float64]{noun: what, read: func(s string) (float64, string) {
		v, pct := strings.CutSuffix(s, "%")
		f, err := strconv.ParseFloat(v, 64)
		if pct {
			f /= 100
		}
		if err != nil || !(f >= 0 && f <= 1) || openLow && f == 0 {
			return 0, notA(s, what)
		}
		return f, ""
	}}
}

// duration is a positive Caddy duration (250ms, 1s, 1h, 1d).
var duration = kind[caddy.Duration]{noun: "a duration, such as 250ms or 1s", read: func(s string) (caddy.Duration, string) {
	d, err := caddy.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, notA(s, "a positive duration, such as 250ms or 1s")
	}
	return caddy.Duration(d), ""
}}

// size is a number of bytes from lo to hi, with an optional unit (64KiB, 1MiB, 1MB).
func size(lo, hi uint64) kind[int64] {
	return kind[int64]{noun: "a size, such as 1MiB or 65536", read: func(s string) (int64, string) {
		n, err := humanize.ParseBytes(s)
		if err != nil {
			return 0, notA(s, "a size; expected a number of bytes with an optional unit, such as 1MiB or 65536")
		}
		if n < lo || n > hi {
			return 0, fmt.Sprintf(" must be between %s and %s, got %q", byteCount(lo), byteCount(hi), s)
		}
		return int64(n), ""
	}}
}

// byteCount writes n in the largest binary unit that divides it (1 byte, 64KiB, 2GiB).
func byteCount(n uint64) string {
	if n == 1 {
		return "1 byte"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for ; i < len(units)-1 && n >= 1024 && n%1024 == 0; i++ {
		n /= 1024
	}
	return strconv.FormatUint(n, 10) + units[i]
}

// sample reads a sampling option: a fraction in (0, 1] and an optional seed.
func sample(o *option) (frac float64, s uint64, err error) {
	if frac, err = next(o, fraction(true)); err != nil {
		return 0, 0, err
	}
	if s, _, err = maybe(o, seed); err != nil {
		return 0, 0, err
	}
	return frac, s, o.end()
}
