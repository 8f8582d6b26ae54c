package trace

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fastjson"
)

// jsonObject parses one JSONL line that must be an object. The returned value lives in p.
func jsonObject(p *fastjson.Parser, line []byte) (*fastjson.Value, error) {
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
