package hf

// byteSymbols spells each byte as GPT-2's bytes_to_unicode does: printable Latin-1 bytes stand
// for themselves, the others are shifted past U+0100, so that a vocabulary of strings covers
// every byte sequence without control or space characters.
var byteSymbols = func() (t [256]string) {
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = string(rune(b))
		} else {
			t[b] = string(rune(256 + n))
			n++
		}
	}
	return t
}()

// SpellBytes spells the bytes of s as byte-level vocabularies do (GPT-2's bytes_to_unicode),
// for tools that build or read such vocabularies.
func SpellBytes(s string) string { return toByteSymbols(s) }

// toByteSymbols spells s's bytes in byte symbols.
func toByteSymbols(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		n += len(byteSymbols[s[i]])
	}
	b := make([]byte, 0, n)
	for i := 0; i < len(s); i++ {
		b = append(b, byteSymbols[s[i]]...)
	}
	return string(b)
}
