package tokens

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty text has no tokens", "", 0},
		{"common words are one token each with their leading space", "Once upon a time", 4},
		{"o200k_base merges the words of a known phrase", "hello world", 2},
		{"a cut multi-byte character still counts instead of failing", "caf\xc3", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Count([]byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Count(%q) = %d, want %d", tt.text, got, tt.want)
			}
		})
	}
}

func BenchmarkCount(b *testing.B) {
	text := []byte(" there was a little girl named Lily. She loved to play outside in the park with her friends.")
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Count(text); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIDsAgreeWithCount checks that IDs returns one id per counted token, and that a shared
// prefix of words gives the same leading ids (which the recorder's prefix hashing relies on).
func TestIDsAgreeWithCount(t *testing.T) {
	for _, text := range []string{"", "Once upon a time", "caf\xc3", "hello world, hello world"} {
		ids, err := IDs([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := Count([]byte(text))
		if len(ids) != n {
			t.Errorf("%q: %d ids, Count says %d", text, len(ids), n)
		}
	}
	a, _ := IDs([]byte("The lighthouse keeper lit the lamp. Then"))
	b, _ := IDs([]byte("The lighthouse keeper lit the lamp. Later"))
	if len(a) < 3 || a[0] != b[0] || a[1] != b[1] {
		t.Errorf("a shared prefix tokenized differently: %v vs %v", a, b)
	}
}
