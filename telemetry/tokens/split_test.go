package tokens

import (
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// libraryIDs are the ids of tiktoken-go's own Encode, pattern matching included: what IDs
// must return.
func libraryIDs(t testing.TB, text string) []uint {
	t.Helper()
	if err := Warm(); err != nil {
		t.Fatal(err)
	}
	ids, _, err := codec.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// splitCorpus holds what the pattern's alternatives and classes turn on: contractions in every
// case (and ſ, which (?i) reads as s), capitals inside words, marks that start words, numbers
// of every length, symbol runs followed by line breaks and slashes, every kind of whitespace
// run before a word, a line break or the end, and scripts without case.
var splitCorpus = []string{
	"The keeper's lamp; THE KEEPER'S LAMP. It'S, it'LL, they'Re, we'VE, I'm, you'D, he'ſ, don't'",
	"camelCaseWord XMLHttpRequest iPhone ABCdef aBC 'tis 'S 'x'",
	"1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥ ⅷ ½",
	"a  b   c\t\td \n e\r\n\r\nf  \n\n  g   ", "   ", "\n", " \n ", "x \u00a0y\u3000z\u0085w",
	"foo/bar//baz\n/qux --- ??? !!!\n\n... ///\r\n", " -> => ** __init__ <|endoftext|>",
	"\u0301accent e\u0301t\u00e9 Ǆemo ǅemo ǆemo ʰmodifier ˈstress",
	"日本語のテキストです。中文文本，还有标点！한국어 텍스트입니다.",
	"العربية النص مع التشكيل: بِسْمِ اللَّهِ", "हिन्दी पाठ में मात्राएँ और संयुक्ताक्षर",
	"emoji 🙂🙃 👩‍👩‍👧 flags 🇫🇷🇩🇪 and ZWJ",
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi!\"}]}\n\tfunc main() {\n\t\treturn x[i]+y\n\t}\n",
	"\x00\x01\x7f control \x1b[31mred\x1b[0m",
}

// TestIDsMatchTheLibrary: IDs (and Count, its length), which splits by hand and caches pieces, returns exactly the
// library's ids on the corpus, on the corpus joined (pieces meeting at new neighbours) and on
// seeded random strings drawn from every class the pattern distinguishes.
func TestIDsMatchTheLibrary(t *testing.T) {
	t.Parallel()
	texts := append(slices.Clone(splitCorpus), strings.Join(splitCorpus, ""), strings.Join(splitCorpus, " "))
	alphabet := []rune("aZ'sStTlLdDmMrReEvVſ09٣ ½\t\n\r\u00a0\u3000\u0085/.-!?_\u0301\u0903ǅʰ日ア한ب\u0651ह\u094d🙂\u200d")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		got, err := IDs([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		want := libraryIDs(t, text)
		if !slices.Equal(got, want) {
			t.Errorf("IDs(%q) = %v, the library's %v", text, got, want)
		}
		if n, err := Count([]byte(text)); err != nil || n != len(want) {
			t.Errorf("Count(%q) = %d, %v; the library's ids are %d", text, n, err, len(want))
		}
	}
}

// FuzzSplitO200k holds IDs (hand split, cached pieces) to the library on any input.
func FuzzSplitO200k(f *testing.F) {
	for _, s := range splitCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		got, err := IDs([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if want := libraryIDs(t, text); len(text) > 0 && !slices.Equal(got, want) {
			t.Errorf("IDs(%q) = %v, the library's %v", text, got, want)
		}
	})
}

// BenchmarkIDs compares the library's Encode with IDs on a mebibyte of prose with numbers and
// punctuation (the prompt of a long-context request).
//
//	go test ./telemetry/tokens -run '^$' -bench IDs -benchtime 5x
func BenchmarkIDs(b *testing.B) {
	text := strings.Repeat("The keeper trims the wick and winds the clockwork; at 19:42 the lamp (No. 7) burned 3.5 hours.\n", 1<<20/96)
	if err := Warm(); err != nil {
		b.Fatal(err)
	}
	b.Run("library", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		cpu0 := cpuTime()
		for range b.N {
			_, _, _ = codec.Encode(text)
		}
		b.ReportMetric(float64(b.N*len(text))/1e6/(cpuTime()-cpu0).Seconds(), "MB/cpu-s")
	})
	b.Run("split", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		cpu0 := cpuTime()
		for range b.N {
			_, _ = IDs([]byte(text))
		}
		b.ReportMetric(float64(b.N*len(text))/1e6/(cpuTime()-cpu0).Seconds(), "MB/cpu-s")
	})
}

// cpuTime is the CPU time the process used so far, user and system: a figure that does not
// depend on how busy the machine is, unlike wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
