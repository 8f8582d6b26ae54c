package trace

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/internal/limits"
)

// maxLineValues bounds the JSON values of one line: a row's hash ids at their limit and room
// for its other fields. The parser holds ~50 bytes a value, so a 64 MiB line of 30 M tiny
// numbers would take GBs; it is refused before it is parsed.
const maxLineValues = limits.MaxHashIDs + 4096

// countValues returns an upper bound on the JSON values in line (one more than its commas,
// brackets and braces outside strings), stopping as soon as it passes max.
func countValues(line []byte, max int) int {
	n, inStr, esc := 1, false, false
	for _, c := range line {
		switch {
		case esc:
			esc = false
		case inStr:
			switch c {
			case '\\':
				esc = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ',' || c == '[' || c == '{':
			if n++; n > max {
				return n
			}
		}
	}
	return n
}

// errTooManyValues is the error of a line with more than maxLineValues values.
var errTooManyValues = fmt.Errorf("more than %d JSON values on one line (%d hash ids at most, limits.MaxHashIDs)", maxLineValues, limits.MaxHashIDs)

// jsonObject parses one JSONL line that must be an object. The returned value lives in p.
func jsonObject(p *fastjson.Parser, line []byte) (*fastjson.Value, error) {
	if countValues(line, maxLineValues) > maxLineValues {
		return nil, errTooManyValues
	}
	v, err := p.ParseBytes(line)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("not a JSON object but %s", v.Type())
	}
	return v, nil
}

// present returns the value of key, or nil when it is absent or null.
func present(o *fastjson.Value, key string) *fastjson.Value {
	v := o.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil
	}
	return v
}

// numberText returns the literal text of a JSON number, so it can be parsed exactly.
// The text goes into *buf, which is reused from call to call.
func numberText(buf *[]byte, v *fastjson.Value) ([]byte, error) {
	if v.Type() != fastjson.TypeNumber {
		return nil, fmt.Errorf("want a number, got %s", v.Type())
	}
	*buf = v.MarshalTo((*buf)[:0])
	return *buf, nil
}

// jsonCount reads an optional token count; ok is false when the key is absent or null.
func jsonCount(buf *[]byte, o *fastjson.Value, key string) (n int, ok bool, err error) {
	v := present(o, key)
	if v == nil {
		return 0, false, nil
	}
	b, err := numberText(buf, v)
	if err == nil {
		n, err = parseCount(b)
	}
	if err != nil {
		return 0, false, errField(key, err)
	}
	return n, true, nil
}

// jsonOffset reads an optional non-negative time offset in the given unit.
func jsonOffset(buf *[]byte, o *fastjson.Value, key string, unit time.Duration) (d time.Duration, ok bool, err error) {
	v := present(o, key)
	if v == nil {
		return 0, false, nil
	}
	b, err := numberText(buf, v)
	if err == nil {
		d, err = parseOffset(b, unit)
	}
	if err != nil {
		return 0, false, errField(key, err)
	}
	return d, true, nil
}

// jsonString reads an optional string.
func jsonString(o *fastjson.Value, key string) (string, error) {
	v := present(o, key)
	if v == nil {
		return "", nil
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", errFieldf(key, "want a string, got %s", v.Type())
	}
	return string(b), nil
}

// jsonHashIDs reads an optional array of integer block ids.
func jsonHashIDs(buf *[]byte, o *fastjson.Value, key string) ([]int64, error) {
	v := present(o, key)
	if v == nil {
		return nil, nil
	}
	arr, err := v.Array()
	if err != nil {
		return nil, errFieldf(key, "want an array, got %s", v.Type())
	}
	if len(arr) > limits.MaxHashIDs {
		return nil, errFieldf(key, "%d ids: over the limit of %d a row (limits.MaxHashIDs)", len(arr), limits.MaxHashIDs)
	}
	ids := make([]int64, len(arr))
	for i, e := range arr {
		b, err := numberText(buf, e)
		if err == nil {
			var ok bool
			// Most ids are small non-negative integers; parse those without allocating.
			if ids[i], ok = digits(b); !ok {
				if ids[i], err = strconv.ParseInt(string(b), 10, 64); err != nil {
					err = fmt.Errorf("%q is not an integer", b)
				}
			}
		}
		if err != nil {
			return nil, errField(fmt.Sprintf("%s[%d]", key, i), unwrapNum(err))
		}
	}
	return ids, nil
}

// unwrapNum drops strconv's "strconv.ParseInt: parsing …" wrapper if one slipped through.
func unwrapNum(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Errorf("%q is not an integer", ne.Num)
	}
	return err
}
