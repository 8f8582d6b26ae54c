package recorder

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

func TestRedact(t *testing.T) {
	cases := []struct {
		name  string
		why   string
		rules Redact
		body  string
		want  string // "" means an error is expected
	}{
		{"verbatim", "without rules the bytes are kept exactly, spacing and key order included",
			Redact{}, `{"model": "m",  "b":1.50, "messages":[]}`, `{"model": "m",  "b":1.50, "messages":[]}`},
		{"one line", "a pretty-printed body is compacted to fit one JSONL line",
			Redact{}, "{\n  \"model\": \"m\",\n  \"n\": 1\n}\n", `{"model":"m","n":1}`},
		{"drop fields", "listed top-level fields disappear, nested ones of the same name stay",
			Redact{Fields: []string{"user", "metadata"}}, `{"user":"u-1","metadata":{"k":"v"},"x":{"user":"keep"}}`, `{"x":{"user":"keep"}}`},
		{"chat text", "message contents become x's of the same length; roles stay",
			Redact{Text: true}, `{"messages":[{"role":"user","content":"héllo there"}],"max_tokens":5}`, `{"messages":[{"role":"user","content":"xxxxx xxxxx"}],"max_tokens":5}`},
		{"content parts", "text parts are masked, part types and image detail kept",
			Redact{Text: true}, `{"messages":[{"role":"user","content":[{"type":"text","text":"ab c"},{"type":"image_url","image_url":{"url":"data:x","detail":"low"}}]}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"xx x"},{"type":"image_url","image_url":{"url":"xxxxxx","detail":"low"}}]}]}`},
		{"prompt array", "completions prompts (string arrays) are masked element by element",
			Redact{Text: true}, `{"prompt":["a b","cd"],"model":"m"}`, `{"prompt":["x x","xx"],"model":"m"}`},
		{"anthropic system", "a top-level system string is text too; model is not",
			Redact{Text: true}, `{"model":"claude","system":"be kind","messages":[]}`, `{"model":"claude","system":"xx xxxx","messages":[]}`},
		{"escapes", "escaped characters count as the characters they stand for",
			Redact{Text: true}, `{"prompt":"a\nb\"c"}`, `{"prompt":"x\nxxx"}`},
		{"cut body", "a body cut at capture is not a JSON object and is not written",
			Redact{}, `{"model":"m","messages":[{"role":"us`, ""},
		{"array", "a JSON array is not a request body",
			Redact{}, `[1,2]`, ""},
		{"too large", "over the cap",
			Redact{}, `{"p":"` + strings.Repeat("a", 300) + `"}`, ""},
	}
	for _, tc := range cases {
		rd := redactor{rules: tc.rules, max: 200}
		got, err := rd.payload([]byte(tc.body))
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s (%s): got %s, want an error", tc.name, tc.why, got)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s (%s):\n got %s (%v)\nwant %s", tc.name, tc.why, got, err, tc.want)
		}
	}
}

// FuzzRedact feeds arbitrary bodies through every rule: no panic, and whatever is accepted is
// one line of valid JSON object, with each masked string as long (in characters) as before.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{`{"messages":[{"role":"user","content":"hi"}]}`, `{"prompt":["a","b"]}`, "{\n}", `{"system":[{"type":"text","text":"x"}]}`, `[`, `{"a":"\u00e9"}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, text bool) {
		rd := redactor{rules: Redact{Fields: []string{"user"}, Text: text}, max: 1 << 16}
		out, err := rd.payload(body)
		if err != nil {
			return
		}
		if strings.ContainsAny(string(out), "\r\n") {
			t.Fatalf("payload spans lines: %q", out)
		}
		if err := fastjson.ValidateBytes(out); err != nil || out[0] != '{' {
			t.Fatalf("payload is not a JSON object: %q (%v)", out, err)
		}
		if !text {
			return
		}
		var in, got map[string]any
		if json.Unmarshal(body, &in) != nil || json.Unmarshal(out, &got) != nil {
			return
		}
		if p, ok := in["prompt"].(string); ok {
			if q, _ := got["prompt"].(string); utf8.RuneCountInString(p) != utf8.RuneCountInString(q) && utf8.ValidString(p) {
				t.Fatalf("masked prompt %q has another length than %q", q, p)
			}
		}
	})
}
