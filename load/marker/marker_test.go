package marker

import (
	"strings"
	"testing"
	"time"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newSigner(t testing.TB, c *clock, key []byte) *Signer {
	t.Helper()
	s, err := New(Options{Key: key, Now: c.now, MaxSeen: 8})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignVerify(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSigner(t, c, nil)
	m := s.Sign("shadow", "load-a")
	got, res := s.Verify(m)
	if res != OK || got.Class != "shadow" || got.Load != LoadID("load-a") || !s.Own(got) {
		t.Fatalf("Verify(%q) = %+v, %v; want shadow of load-a, ok", m, got, res)
	}
	if m2 := s.Sign("shadow", "load-a"); m2 == m {
		t.Fatalf("two marks are equal (%q): the nonce must differ", m)
	}
	if got, res := s.Verify(s.Sign("replay", "b")); res != OK || got.Class != "replay" {
		t.Fatalf("replay mark: %+v, %v", got, res)
	}
}

// TestReplayAndExpiry: a mark is good once and for TTL; a replay within the TTL is Replayed, a
// mark used after it is Expired; both are told apart from forgeries.
func TestReplayAndExpiry(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSigner(t, c, nil)
	m := s.Sign("shadow", "a")
	if _, res := s.Verify(m); res != OK {
		t.Fatalf("first use: %v", res)
	}
	if _, res := s.Verify(m); res != Replayed {
		t.Errorf("second use within the TTL: %v, want replayed", res)
	}
	c.t = c.t.Add(DefaultTTL)
	if _, res := s.Verify(m); res != Expired {
		t.Errorf("use after the TTL: %v, want expired", res)
	}
	unused := s.Sign("shadow", "a")
	c.t = c.t.Add(DefaultTTL + time.Second)
	if _, res := s.Verify(unused); res != Expired {
		t.Errorf("a never-used mark after its TTL: %v, want expired", res)
	}
	// A mark from a clock far ahead (a shared key on a host whose clock is wrong) is not good
	// for longer than a fresh one.
	ahead := &clock{c.t.Add(time.Hour)}
	key := make([]byte, KeyLen)
	s1, s2 := newSigner(t, ahead, key), newSigner(t, c, key)
	if _, res := s2.Verify(s1.Sign("shadow", "a")); res != Expired {
		t.Errorf("a mark expiring an hour from now: %v, want expired", res)
	}
}

// TestSeenIsBounded: past MaxSeen remembered nonces the oldest are forgotten, so the memory is
// bounded; expired ones go first.
func TestSeenIsBounded(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSigner(t, c, nil)
	for range 1000 {
		if _, res := s.Verify(s.Sign("shadow", "a")); res != OK {
			t.Fatal(res)
		}
	}
	if n := len(s.seen); n > 8 {
		t.Errorf("%d nonces remembered, want at most MaxSeen 8", n)
	}
	if len(s.ring) > 200 {
		t.Errorf("the ring holds %d entries", len(s.ring))
	}
}

// TestFleetKey: instances sharing a key accept each other's marks, and know them as foreign.
func TestFleetKey(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	key := []byte(strings.Repeat("k", KeyLen))
	a, b := newSigner(t, c, key), newSigner(t, c, key)
	m, res := b.Verify(a.Sign("shadow", "x"))
	if res != OK || b.Own(m) || !a.Own(m) {
		t.Errorf("fleet mark: %+v %v, own by b %v", m, res, b.Own(m))
	}
	if _, err := New(Options{Key: []byte("short")}); err == nil {
		t.Error("a 5-byte key was taken")
	}
}

func TestVerifyRefuses(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s, other := newSigner(t, c, nil), newSigner(t, c, nil)
	good := s.Sign("shadow", "a")
	i := strings.LastIndexByte(good, '.')
	body, tag := good[:i], good[i+1:]
	raw, _ := enc.DecodeString(tag)
	raw[0] ^= 1
	flipped := enc.EncodeToString(raw)
	f := strings.Split(body, ".")
	tests := []struct{ name, v string }{
		{"empty", ""},
		{"a plain word, what a client might send", "shadow"},
		{"true", "1"},
		{"another process's key", other.Sign("shadow", "a")},
		{"class changed: the tag covers it", "replay." + strings.Join(f[1:], ".") + "." + tag},
		{"expiry pushed back: the tag covers it", strings.Join(f[:3], ".") + ".9999999999." + f[4] + "." + tag},
		{"load changed", strings.Join(f[:2], ".") + "." + LoadID("b") + "." + strings.Join(f[3:], ".") + "." + tag},
		{"tag changed", body + "." + flipped},
		{"tag truncated", good[:len(good)-2]},
		{"nonce of the wrong length", strings.Join(f[:4], ".") + ".abc." + tag},
		{"not base64", body + ".!!!!!!!!!!!!!!!!!!!!!!"},
		{"too long", good + strings.Repeat("x", 200)},
		{"no dots", strings.ReplaceAll(good, ".", "")},
		{"the old format", "shadow.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA"},
	}
	for _, tt := range tests {
		if m, res := s.Verify(tt.v); res != Forged {
			t.Errorf("%s: Verify(%q) = %+v, %v; want forged", tt.name, tt.v, m, res)
		}
	}
	if _, res := s.Verify(good); res != OK {
		t.Errorf("the genuine mark after the forgeries: %v", res)
	}
}

func FuzzVerify(f *testing.F) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSigner(f, c, make([]byte, KeyLen))
	f.Add(s.Sign("shadow", "a"))
	f.Add("shadow.x.y.z.w.v")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		m, res := s.Verify(v)
		if res != Forged && !strings.HasPrefix(v, m.Class+".") {
			t.Fatalf("Verify(%q) = %+v, %v", v, m, res)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	s, _ := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		m := s.Sign("shadow", "a")
		b.StartTimer()
		if _, res := s.Verify(m); res != OK {
			b.Fatal(res)
		}
	}
}
