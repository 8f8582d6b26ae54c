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
