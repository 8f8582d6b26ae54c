package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// dangerous reports the first byte or character of s a terminal would act on, if any.
func dangerous(s string, keepLines bool) (string, bool) {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return fmt.Sprintf("invalid byte %#x at %d", s[i], i), true
		}
		if keepLines && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Sprintf("%U at %d", r, i), true
		}
	}
	return "", false
}

func TestEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, str, text string }{
		{"gpt-4o", "gpt-4o", "gpt-4o"},
		{"\x1b]0;pwned\x07\x1b[2J", `\u001b]0;pwned\u0007\u001b[2J`, `\u001b]0;pwned\u0007\u001b[2J`},
		{"a\nb\tc\rd", `a\u000ab\u0009c\u000dd`, "a\nb\tc\\u000dd"},
		{"del\x7f c1\u009b[31m raw\x9b[31m", `del\u007f c1\u009b[31m raw\x9b[31m`, `del\u007f c1\u009b[31m raw\x9b[31m`},
		{"naïve 模型 ✓", "naïve 模型 ✓", "naïve 模型 ✓"},
	} {
		if got := String(tc.in); got != tc.str {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.str)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// TestEveryByte: no byte value, alone or in any position, survives String or Text as a control.
func TestEveryByte(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for _, s := range []string{string([]byte{byte(b)}), "x" + string([]byte{byte(b)}) + "y", string([]byte{0xc2, byte(b)})} {
			if what, bad := dangerous(String(s), false); bad {
				t.Errorf("String(%q) keeps %s", s, what)
			}
			if what, bad := dangerous(Text(s), true); bad {
				t.Errorf("Text(%q) keeps %s", s, what)
			}
		}
	}
	for r := rune(0); r < 0x100; r++ {
		if what, bad := dangerous(String(string(r)), false); bad {
			t.Errorf("String(%U) keeps %s", r, what)
		}
	}
}

// TestWriterKeepsJSON: a JSON document written through Writer decodes to the same value (the
// escapes are JSON's own), while the bytes carry no control but newlines.
func TestWriterKeepsJSON(t *testing.T) {
	t.Parallel()
	v := map[string]string{"model": "\x1b]0;t\x07m\u009b\x7f", "ok": "plain"}
	doc, _ := json.MarshalIndent(v, "", "  ")
	var buf bytes.Buffer
	n, err := Writer(&buf).Write(doc)
	if err != nil || n != len(doc) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(doc))
	}
	if what, bad := dangerous(buf.String(), true); bad {
		t.Fatalf("the output keeps %s: %q", what, buf.String())
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["model"] != v["model"] || back["ok"] != "plain" {
		t.Fatalf("decoded %q, %v; want %q", back, err, v)
	}
}

func FuzzString(f *testing.F) {
	f.Add("\x1b[2J\u009b\x7f\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if what, bad := dangerous(String(s), false); bad {
			t.Fatalf("String(%q) keeps %s", s, what)
		}
		if what, bad := dangerous(Text(s), true); bad {
			t.Fatalf("Text(%q) keeps %s", s, what)
		}
		if Safe(s) != (Text(s) == s) {
			t.Fatalf("Safe(%q) = %v but Text changes it to %q", s, Safe(s), Text(s))
		}
	})
}
