package decode

import (
	"encoding/json"
	"testing"
)

func TestCloseTruncated(t *testing.T) {
	t.Parallel()
	rows := []struct {
		in, out, reason string
		ok              bool
	}{
		{`{`, `{}`, "an object just opened is closed", true},
		{`  {"a":1,`, `  {"a":1}`, "a value before a comma is complete", true},
		{`{"a":1`, `{}`, "a number at the cut may be incomplete", true},
		{`{"a":tr`, `{}`, "a literal at the cut is incomplete", true},
		{`{"a":"x"`, `{"a":"x"}`, "a closed string value is complete", true},
		{`{"a":"x`, `{}`, "an open string under another key is dropped", true},
		{`{"content":"x`, `{"content":"x"}`, "an open prompt string is kept and closed", true},
		{`{"content":"x\`, `{"content":"x"}`, "a lone backslash is dropped", true},
		{`{"content":"x\u12`, `{"content":"x"}`, "half a \\u escape is dropped", true},
		{`{"content":"x\u1234`, `{"content":"x\u1234"}`, "a whole \\u escape is kept", true},
		{`{"content":"x\"`, `{"content":"x\""}`, "an escaped quote does not close the string", true},
		{`{"content":"x\ud83d`, `{"content":"x"}`, "half a surrogate pair is dropped", true},
		{`{"content":"x\ud83d\ude00`, `{"content":"x\ud83d\ude00"}`, "a whole surrogate pair is kept", true},
		{`{"conte`, `{}`, "an open key is dropped", true},
		{`{"content"`, `{}`, "a key without a value is dropped", true},
		{`{"content":`, `{}`, "a colon without a value is dropped", true},
		{`{"m":[{"content":"a"},{"content":"b`, `{"m":[{"content":"a"},{"content":"b"}]}`, "nested containers are closed in order", true},
		{`{"prompt":["a","b`, `{"prompt":["a","b"]}`, "array elements under prompt are kept", true},
		{`{"stop":["a","b`, `{"stop":["a"]}`, "a closed element before the cut is kept, the open one dropped", true},
		{`{"a":{}}`, ``, "a complete object is not cut", false},
		{`{"a":1}x`, ``, "trailing data after a complete object is not a cut", false},
		{`{"a":]`, ``, "mismatched brackets are not a cut", false},
		{`[1,2`, ``, "only objects are repaired", false},
		{``, ``, "nothing is not a cut object", false},
	}
	for _, r := range rows {
		out, ok := closeTruncated(nil, []byte(r.in))
		if ok != r.ok || string(out) != r.out {
			t.Errorf("%s: closeTruncated(%q) = %q, %v; want %q, %v", r.reason, r.in, out, ok, r.out, r.ok)
		}
		if ok && !json.Valid(out) {
			t.Errorf("%s: closeTruncated(%q) = %q is not valid JSON", r.reason, r.in, out)
		}
	}
}
