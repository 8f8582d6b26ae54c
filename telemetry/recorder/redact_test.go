package recorder

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
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
		{"duplicate field", "Python and Go servers read the last of duplicate keys: every occurrence goes",
			Redact{Fields: []string{"api_key"}}, `{"api_key":"a","n":1,"api_key":"b"}`, `{"n":1}`},
		{"field spellings", "Go's encoding/json matches keys in any case (Unicode folding, Kelvin sign) and after unescaping",
			Redact{Fields: []string{"api_key"}}, `{"API_KEY":"a","Api_Key":"b","api_\u212aey":"c","api\u005fkey":"d","x":1}`, `{"x":1}`},
		{"duplicate text", "a second messages field is masked like the first",
			Redact{Text: true}, `{"messages":[{"role":"user","content":"ab"}],"messages":[{"role":"user","content":"cd"}]}`,
			`{"messages":[{"role":"user","content":"xx"}],"messages":[{"role":"user","content":"xx"}]}`},
		{"duplicate nested text", "a second content inside one message is masked too",
			Redact{Text: true}, `{"messages":[{"role":"user","content":"ab","content":"cd"}]}`, `{"messages":[{"role":"user","content":"xx","content":"xx"}]}`},
		{"text spellings", "MESSAGES and Prompt are what a Go server reads as messages and prompt",
			Redact{Text: true}, `{"MESSAGES":[{"role":"user","content":"ab"}],"Prompt":"cd"}`, `{"MESSAGES":[{"role":"user","content":"xx"}],"Prompt":"xx"}`},
		{"structural spelling", "a structural key in another case is masked: fidelity is lost, never secrecy",
			Redact{Text: true}, `{"messages":[{"ROLE":"ab","role":"user"}]}`, `{"messages":[{"ROLE":"xx","role":"user"}]}`},
		{"control whitespace", "a masked vertical tab is written as JSON has it (\\u000b, not Go's \\v)",
			Redact{Text: true}, `{"prompt":"a\u000bb"}`, `{"prompt":"x\u000bx"}`},
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

// FuzzRedactKeys checks redaction against what real servers would read from the redacted body:
// Go's encoding/json (last of duplicate keys, any case) and Python's json (last, exact case;
// a Go map is read the same way). Whatever either reads as api_key must be absent, and every
// string either reads inside messages or prompt must be masked. The seeds repeat and re-spell
// the keys; the fuzzer mutates the spellings and the nesting.
func FuzzRedactKeys(f *testing.F) {
	for _, s := range []string{
		`{"api_key":"a","api_key":"s3cret"}`,
		`{"API_KEY":"s3cret","Api_Key":"b","api_\u212aey":"c","api\u005fkey":"d"}`,
		`{"messages":[{"role":"user","content":"ab"}],"messages":[{"role":"user","content":"s3cret"}]}`,
		`{"MESSAGES":[{"role":"user","content":"ab","content":"s3cret"}],"Prompt":"x y","prompt":["a","b"]}`,
		`{"meſſages":[{"role":"user","content":"s3cret"}],"PROMPT":"s3cret"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rd := redactor{rules: Redact{Fields: []string{"api_key"}, Text: true}, max: 1 << 16}
		out, err := rd.payload(body)
		if err != nil {
			return
		}
		var goView struct {
			APIKey   any `json:"api_key"`
			Messages any `json:"messages"`
			Prompt   any `json:"prompt"`
		}
		if json.Unmarshal(out, &goView) != nil {
			return // not JSON Go reads (invalid UTF-8 is still read; other cases are not servers' input)
		}
		var pyView map[string]any
		_ = json.Unmarshal(out, &pyView)
		if goView.APIKey != nil {
			t.Fatalf("Go reads api_key %v from %s (body %s)", goView.APIKey, out, body)
		}
		if v, ok := pyView["api_key"]; ok {
			t.Fatalf("Python reads api_key %v from %s (body %s)", v, out, body)
		}
		for _, v := range []any{goView.Messages, goView.Prompt, pyView["messages"], pyView["prompt"]} {
			if s, ok := unmasked(v); ok {
				t.Fatalf("text %q is in clear in %s (body %s)", s, out, body)
			}
		}
	})
}

// unmasked returns a string inside v that is not only x's and whitespace, skipping the values
// of structural keys.
func unmasked(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		for _, c := range v {
			if c != 'x' && !unicode.IsSpace(c) {
				return v, true
			}
		}
	case []any:
		for _, it := range v {
			if s, ok := unmasked(it); ok {
				return s, true
			}
		}
	case map[string]any:
		for k, it := range v {
			if structuralKeys[k] {
				continue
			}
			if s, ok := unmasked(it); ok {
				return s, true
			}
		}
	}
	return "", false
}
