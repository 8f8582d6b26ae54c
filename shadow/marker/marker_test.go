package marker

import (
	"strings"
	"testing"
)

func TestSignVerify(t *testing.T) {
	s := New()
	m := s.Sign("shadow")
	if c, ok := s.Verify(m); !ok || c != "shadow" {
		t.Fatalf("Verify(%q) = %q, %v; want shadow, true", m, c, ok)
	}
	if m2 := s.Sign("shadow"); m2 == m {
		t.Fatalf("two marks are equal (%q): the nonce must differ", m)
	}
	if c, ok := s.Verify(s.Sign("replay")); !ok || c != "replay" {
		t.Fatalf("replay mark: %q, %v", c, ok)
	}
}

func TestVerifyRefuses(t *testing.T) {
	s, other := New(), New()
	good := s.Sign("shadow")
	_, rest, _ := strings.Cut(good, ".")
	nonce, tag, _ := strings.Cut(rest, ".")
	raw, _ := enc.DecodeString(tag)
	raw[0] ^= 1
	flipped := enc.EncodeToString(raw)
	tests := []struct{ name, v string }{
		{"empty", ""},
		{"a plain word, what a client might send", "shadow"},
		{"true", "1"},
		{"another process's key", other.Sign("shadow")},
		{"class changed: the tag covers it", "replay." + nonce + "." + tag},
		{"tag changed", "shadow." + nonce + "." + flipped},
		{"tag truncated", good[:len(good)-2]},
		{"nonce of the wrong length", "shadow.abc." + tag},
		{"not base64", "shadow." + nonce + ".!!!!!!!!!!!!!!!!!!!!!!"},
		{"too long", good + strings.Repeat("x", 200)},
		{"no dots", strings.ReplaceAll(good, ".", "")},
	}
	for _, tt := range tests {
		if c, ok := s.Verify(tt.v); ok {
			t.Errorf("%s: Verify(%q) = %q, true; want refusal", tt.name, tt.v, c)
		}
	}
}

func FuzzVerify(f *testing.F) {
	s := NewWithKey([32]byte{1})
	f.Add(s.Sign("shadow"))
	f.Add("shadow.x.y")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := s.Verify(v)
		if ok && !strings.HasPrefix(v, c+".") {
			t.Fatalf("Verify(%q) accepted with class %q", v, c)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	s := New()
	m := s.Sign("shadow")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Verify(m); !ok {
			b.Fatal("refused")
		}
	}
}
