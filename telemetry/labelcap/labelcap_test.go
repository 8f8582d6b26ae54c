package labelcap

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	long := strings.Repeat("m", 200<<10)
	for _, tc := range []struct {
		why, in string
		same    bool
	}{
		{"a short valid name is kept", "llama-3.1-8b-instruct", true},
		{"exactly MaxLen bytes is kept", strings.Repeat("a", MaxLen), true},
		{"one byte over is shortened", strings.Repeat("a", MaxLen+1), false},
		{"a 200 KB name is shortened", long, false},
		{"invalid UTF-8 is shortened even when short", "m\xff", false},
	} {
		got := Shorten(tc.in)
		if (got == tc.in) != tc.same {
			t.Errorf("%s: Shorten(%.40q…) = %.60q", tc.why, tc.in, got)
		}
		if len(got) > MaxLen || !utf8.ValidString(got) {
			t.Errorf("%s: %q is %d bytes or not UTF-8", tc.why, got, len(got))
		}
	}
	// Two long names that share their first 200 KB but differ at the end never merge.
	a, b := Shorten(long+"a"), Shorten(long+"b")
	if a == b {
		t.Errorf("two different long names got the same label %q", a)
	}
	if !strings.HasPrefix(a, strings.Repeat("m", MaxLen-hashLen)) || a[MaxLen-hashLen] != '~' {
		t.Errorf("label %q: want the name's start, then ~ and the hash", a)
	}
	if Shorten(long+"a") != a {
		t.Error("the same name got two labels")
	}
	// A cut never splits a character.
	if s := Shorten(strings.Repeat("é", 100)); !utf8.ValidString(s) || len(s) > MaxLen {
		t.Errorf("%q", s)
	}
}

// TestSetFoldingRule: the first Max distinct values keep their own series for good, every
// later one folds into Other and is counted; shortened values count once per distinct value.
func TestSetFoldingRule(t *testing.T) {
	s := New(3)
	for _, v := range []string{"a", "b", "a", strings.Repeat("x", 1000) + "1"} {
		if l, folded := s.Label(v); folded || l != Shorten(v) {
			t.Errorf("Label(%.20q) = %.30q, %v: there was room", v, l, folded)
		}
	}
	for _, v := range []string{"c", strings.Repeat("x", 1000) + "2", "d"} {
		if l, folded := s.Label(v); !folded || l != Other {
			t.Errorf("Label(%.20q) = %q, %v: want %s past the limit", v, l, folded, Other)
		}
	}
	for _, v := range []string{"a", "b", strings.Repeat("x", 1000) + "1"} {
		if l, folded := s.Label(v); folded || l != Shorten(v) {
			t.Errorf("Label(%.20q) = %q, %v: a value once given a series keeps it", v, l, folded)
		}
	}
	if l, folded := s.Label(""); l != "" || folded {
		t.Errorf("the empty value: %q %v", l, folded)
	}
	if l, folded := s.Label(Other); l != Other || folded {
		t.Errorf("Other itself: %q %v", l, folded)
	}
	if s.Folded() != 3 {
		t.Errorf("folded %d, want 3", s.Folded())
	}
	s.Reset()
	if l, folded := s.Label("c"); folded || l != "c" || s.Folded() != 0 {
		t.Errorf("after Reset: Label(c) = %q, %v, folded %d", l, folded, s.Folded())
	}
}

// TestSetConcurrent: many goroutines offering more values than the limit never give more
// than Max values their own series.
func TestSetConcurrent(t *testing.T) {
	s := New(10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	own := map[string]bool{}
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				l, _ := s.Label(fmt.Sprintf("m%d", (g*37+i)%50))
				mu.Lock()
				own[l] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(own) != 11 { // 10 values and Other
		t.Errorf("%d distinct labels, want 10 and %s", len(own), Other)
	}
}

func TestKnownValueDoesNotAllocate(t *testing.T) {
	s := New(4)
	long := strings.Repeat("y", 4096)
	s.Label("model")
	s.Label(long)
	if n := testing.AllocsPerRun(100, func() {
		s.Label("model")
		s.Label(long)
		s.Label("other-model-past-limit-1")
		s.Label("x2")
		s.Label("x3")
	}); n != 0 {
		t.Errorf("%v allocations per call of known and folded values", n)
	}
}

func BenchmarkLabelKnown(b *testing.B) {
	s := New(DefaultMax)
	s.Label("llama-3.1-8b-instruct")
	b.ReportAllocs()
	for b.Loop() {
		s.Label("llama-3.1-8b-instruct")
	}
}

// FuzzShorten: every label is at most MaxLen bytes of valid UTF-8, and a value that was already
// one is kept.
func FuzzShorten(f *testing.F) {
	for _, s := range []string{"m", strings.Repeat("é", 80), "a\xffb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l := Shorten(v)
		if len(l) > MaxLen || !utf8.ValidString(l) {
			t.Fatalf("Shorten(%q) = %q", v, l)
		}
		if len(v) <= MaxLen && utf8.ValidString(v) && l != v {
			t.Fatalf("Shorten(%q) changed a valid short value to %q", v, l)
		}
	})
}
