package hf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// Bounds on what a tokenizer file may hold. The largest tokenizers in use (Gemma's, 262,144
// tokens) are about 35 MB of JSON.
const (
	// MaxFileBytes is the largest tokenizer file Load reads.
	MaxFileBytes = 64 << 20
	// MaxTokens bounds the vocabulary, the merges and the added tokens, each.
	MaxTokens = 1 << 20
	// MaxComponents bounds the normalizers and pre-tokenizers, nested sequences included.
	MaxComponents = 64
	// MaxPatternBytes bounds one Regex pattern (of a Split or Replace). Compiling a pattern
	// costs time that grows with its length: a 200,000-alternative pattern took 34 s to load,
	// one of 8 KiB takes at most tens of milliseconds, so a file's patterns (at most
	// MaxComponents of them) load in about a second at worst. The patterns of the tokenizers in
	// use are under 1 KiB (o200k's, the longest known, about 700 bytes).
	MaxPatternBytes = 8 << 10
	// MatchTimeout bounds one pattern match, so that a pattern that backtracks badly on some
	// text fails that text's count instead of stalling the counter.
	MatchTimeout = time.Second
)

// The bounds in force; tests lower them.
var (
	maxFileBytes = MaxFileBytes
	maxTokens    = MaxTokens
)

// file is the part of tokenizer.json that encoding reads.
type file struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

// component is the common shape of a normalizer or pre-tokenizer: its type and all fields any
// supported type reads.
type component struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	// Strip
	StripLeft  *bool `json:"strip_left"`
	StripRight *bool `json:"strip_right"`
	// Prepend
	Prepend string `json:"prepend"`
	// Replace, Split
	Pattern  *pattern `json:"pattern"`
	Content  string   `json:"content"`
	Behavior string   `json:"behavior"`
	Invert   bool     `json:"invert"`
	// ByteLevel
	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
	// Metaspace
	Replacement   *string `json:"replacement"`
	PrependScheme string  `json:"prepend_scheme"`
	Split         *bool   `json:"split"`
	// Digits
	IndividualDigits bool `json:"individual_digits"`
}

type pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type model struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// GPT-2's pre-tokenization pattern, which ByteLevel uses when use_regex is on.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// LoadFile reads the tokenizer file at path (at most MaxFileBytes).
func LoadFile(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(maxFileBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	t, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Load reads a tokenizer from the contents of a tokenizer.json file.
func Load(data []byte) (*Tokenizer, error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("tokenizer file larger than %d bytes", maxFileBytes)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reading tokenizer JSON: %w", err)
	}
	if len(f.AddedTokens) > maxTokens {
		return nil, fmt.Errorf("added_tokens: more than %d", maxTokens)
	}
	t := &Tokenizer{}
	var err error
	budget := MaxComponents
	if t.normalizer, err = buildNormalizer(f.Normalizer, &budget); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.pre, err = buildPreTokenizer(f.PreTokenizer, &budget); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if t.model, err = buildModel(f.Model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var raw, normalized []addedToken
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %q: negative id %d", a.Content, a.ID)
		}
		tok := addedToken{content: a.Content, id: a.ID, singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip}
		if a.Normalized && !a.Special && t.normalizer != nil {
			// Matched in normalized text, so spelled normalized.
			if tok.content, err = t.normalizer.normalize(a.Content); err != nil {
				return nil, fmt.Errorf("added token %q: %w", a.Content, err)
			}
			normalized = append(normalized, tok)
		} else {
			raw = append(raw, tok)
		}
	}
	t.added, t.addedNormalized = newAddedSet(raw), newAddedSet(normalized)
	return t, nil
}

func spend(budget *int) error {
	if *budget--; *budget < 0 {
		return fmt.Errorf("more than %d components", MaxComponents)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// readComponent reads a normalizer or pre-tokenizer; nil for a missing or null one.
func readComponent(raw json.RawMessage, budget *int) (*component, error) {
	if isNull(raw) {
		return nil, nil
	}
	if err := spend(budget); err != nil {
		return nil, err
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.Type == "" {
		return nil, errors.New("component without a type")
	}
	return &c, nil
}

// sequence builds the members of a Sequence with build, leaving out the null ones.
func sequence[T comparable](raws []json.RawMessage, budget *int, build func(json.RawMessage, *int) (T, error)) ([]T, error) {
	var seq []T
	var none T
	for i, r := range raws {
		x, err := build(r, budget)
		if err != nil {
			return nil, fmt.Errorf("item %d of the Sequence: %w", i, err)
		}
		if x != none {
			seq = append(seq, x)
		}
	}
	return seq, nil
}

func buildNormalizer(raw json.RawMessage, budget *int) (normalizer, error) {
	c, err := readComponent(raw, budget)
	if c == nil || err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := sequence(c.Normalizers, budget, buildNormalizer)
		return normalizers(seq), err
	case "NFC":
		return unicodeForm{norm.NFC}, nil
	case "NFD":
		return unicodeForm{norm.NFD}, nil
	case "NFKC":
		return unicodeForm{norm.NFKC}, nil
	case "NFKD":
		return unicodeForm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Strip":
		return strip{left: c.StripLeft == nil || *c.StripLeft, right: c.StripRight == nil || *c.StripRight}, nil
	case "Prepend":
		return prepend{c.Prepend}, nil
	case "Replace":
		if c.Pattern == nil {
			return nil, errors.New("the Replace normalizer has no pattern")
		}
		if c.Pattern.Regex != nil {
			re, err := compile(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("the Replace normalizer's pattern: %w", err)
			}
			return replace{re: re, content: c.Content}, nil
		}
		if c.Pattern.String == nil {
			return nil, errors.New("the Replace normalizer's pattern is neither String nor Regex")
		}
		return replace{literal: *c.Pattern.String, content: c.Content}, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace, Sequence)", c.Type)
}

func buildPreTokenizer(raw json.RawMessage, budget *int) (preTokenizer, error) {
	c, err := readComponent(raw, budget)
	if c == nil || err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := sequence(c.PreTokenizers, budget, buildPreTokenizer)
		return preTokenizers(seq), err
	case "ByteLevel":
		b := byteLevel{addPrefixSpace: c.AddPrefixSpace != nil && *c.AddPrefixSpace}
		if c.UseRegex == nil || *c.UseRegex {
			re, err := compile(gpt2Pattern)
			if err != nil {
				return nil, err
			}
			b.re = &splitter{find: regexMatcher(re), how: isolated}
		}
		return b, nil
	case "Split":
		how, ok := behaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("the Split pre-tokenizer has an unknown behavior %q", c.Behavior)
		}
		if c.Pattern == nil {
			return nil, errors.New("the Split pre-tokenizer has no pattern")
		}
		sp := splitter{how: how, invert: c.Invert}
		switch {
		case c.Pattern.Regex != nil:
			re, err := compile(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("the Split pre-tokenizer's pattern: %w", err)
			}
			sp.find = regexMatcher(re)
		case c.Pattern.String != nil:
			sp.find = literalMatcher(*c.Pattern.String)
		default:
			return nil, errors.New("the Split pre-tokenizer's pattern is neither String nor Regex")
		}
		return sp, nil
	case "Metaspace":
		m := metaspace{replacement: "▁", scheme: "always"}
		if c.Replacement != nil {
			if *c.Replacement == "" {
				return nil, errors.New("the Metaspace pre-tokenizer has an empty replacement")
			}
			m.replacement = *c.Replacement
		}
		switch c.PrependScheme {
		case "":
			if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
				m.scheme = "never" // files from before prepend_scheme existed
			}
		case "always", "first", "never":
			m.scheme = c.PrependScheme
		default:
			return nil, fmt.Errorf("the Metaspace pre-tokenizer has an unknown prepend_scheme %q", c.PrependScheme)
		}
		if c.Split == nil || *c.Split {
			m.splitOn = &splitter{find: literalMatcher(m.replacement), how: mergedWithNext}
		}
		return m, nil
	case "Digits":
		how := contiguous
		if c.IndividualDigits {
			how = isolated
		}
		return splitter{find: runeMatcher(isNumeric), how: how}, nil
	case "Whitespace":
		re, err := compile(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, err
		}
		return splitter{find: regexMatcher(re), how: removed, invert: true}, nil
	case "WhitespaceSplit":
		return splitter{find: runeMatcher(isSpace), how: removed}, nil
	case "Punctuation":
		how := isolated
		if c.Behavior != "" {
			var ok bool
			if how, ok = behaviors[c.Behavior]; !ok {
				return nil, fmt.Errorf("the Punctuation pre-tokenizer has an unknown behavior %q", c.Behavior)
			}
		}
		return splitter{find: runeMatcher(isPunctuation), how: how}, nil
	}
	return nil, fmt.Errorf("pre-tokenizer type %q is not supported (supported: ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, Sequence)", c.Type)
}

func compile(expr string) (*regexp2.Regexp, error) {
	if len(expr) > MaxPatternBytes {
		return nil, fmt.Errorf("a Regex pattern of %d bytes: longer than the %d bytes a pattern may have (hf.MaxPatternBytes)", len(expr), MaxPatternBytes)
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", expr, err)
	}
	re.MatchTimeout = MatchTimeout
	return re, nil
}

func buildModel(raw json.RawMessage) (*bpe, error) {
	if isNull(raw) {
		return nil, errors.New("no model")
	}
	var mf model
	if err := json.Unmarshal(raw, &mf); err != nil {
		return nil, err
	}
	if mf.Type == "" && !isNull(mf.Merges) {
		mf.Type = "BPE" // files from before the type was written
	}
	if mf.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (supported: BPE)", mf.Type)
	}
	m := &bpe{unk: -1, fuseUnk: mf.FuseUnk, byteFallback: mf.ByteFallback, ignoreMerges: mf.IgnoreMerges}
	if mf.ContinuingSubwordPrefix != nil {
		m.prefix = *mf.ContinuingSubwordPrefix
	}
	if mf.EndOfWordSuffix != nil {
		m.suffix = *mf.EndOfWordSuffix
	}
	var err error
	if m.vocab, err = readVocab(mf.Vocab); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	if mf.UnkToken != nil {
		id, ok := m.vocab[*mf.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *mf.UnkToken)
		}
		m.unk = id
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[byteToken(b)]; ok {
			m.byteIDs[b] = id
		}
	}
	m.merges = make(map[uint64]merge, len(m.vocab)) // a BPE has about as many merges as tokens
	pairs, err := readMerges(mf.Merges)
	if err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	for rank, p := range pairs {
		ida, oka := m.vocab[p[0]]
		idb, okb := m.vocab[p[1]]
		if !oka || !okb {
			return nil, fmt.Errorf("merges: merge %d: %q or %q is not in the vocabulary", rank, p[0], p[1])
		}
		joined := p[0] + strings.TrimPrefix(p[1], m.prefix)
		id, ok := m.vocab[joined]
		if !ok {
			return nil, fmt.Errorf("merges: merge %d: the merged token %q is not in the vocabulary", rank, joined)
		}
		m.merges[pairKey(ida, idb)] = merge{rank: int32(rank), id: id} // a repeated pair: the last wins, as in the reference
	}
	return m, nil
}

// readVocab reads the vocabulary object. One that cannot hold more than maxTokens entries (it
// has no more colons than that) is decoded whole, quickly; any other, or one that does not
// decode, entry by entry, so that the bound holds before the entries are allocated and an
// error says where.
func readVocab(raw json.RawMessage) (map[string]int32, error) {
	vocab := map[string]int32{}
	if !isNull(raw) && bytes.Count(raw, []byte{':'}) <= maxTokens && json.Unmarshal(raw, &vocab) == nil {
		for tok, id := range vocab {
			if id < 0 {
				return nil, fmt.Errorf("token %q has negative id %d", tok, id)
			}
		}
		return vocab, nil
	}
	clear(vocab)
	err := eachEntry(raw, '{', func(d *json.Decoder) error {
		key, err := d.Token()
		if err != nil {
			return err
		}
		var id int32
		if err := d.Decode(&id); err != nil {
			return err
		}
		if id < 0 {
			return fmt.Errorf("token %q has negative id %d", key, id)
		}
		if len(vocab) == maxTokens {
			return fmt.Errorf("more than %d tokens", maxTokens)
		}
		vocab[key.(string)] = id
		return nil
	})
	return vocab, err
}

// readMerges reads the merges array, in either format, with readVocab's two ways.
func readMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	if bytes.Count(raw, []byte{','})+1 <= maxTokens {
		if out, ok := decodeMerges(raw); ok {
			return out, nil
		}
	}
	var out [][2]string
	err := eachEntry(raw, '[', func(d *json.Decoder) error {
		var m json.RawMessage
		if err := d.Decode(&m); err != nil {
			return err
		}
		if len(out) == maxTokens {
			return fmt.Errorf("more than %d", maxTokens)
		}
		a, b, err := parseMerge(m)
		if err != nil {
			return fmt.Errorf("merge %d: %w", len(out), err)
		}
		out = append(out, [2]string{a, b})
		return nil
	})
	return out, err
}

// decodeMerges decodes merges all of one format at once; ok false when they are not.
func decodeMerges(raw json.RawMessage) ([][2]string, bool) {
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, false
			}
			out[i] = [2]string{a, b}
		}
		return out, true
	}
	var pairs [][]string
	if json.Unmarshal(raw, &pairs) != nil {
		return nil, false
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, false
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, true
}

// eachEntry calls fn for each entry of the JSON object (open '{') or array (open '[') in raw,
// with the decoder positioned at the entry. A missing or null raw has no entries.
func eachEntry(raw json.RawMessage, open json.Delim, fn func(*json.Decoder) error) error {
	if isNull(raw) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != open {
		return fmt.Errorf("not a JSON %s", map[json.Delim]string{'{': "object", '[': "array"}[open])
	}
	for d.More() {
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// parseMerge reads a merge in either format: "a b" (older files) or ["a", "b"].
func parseMerge(raw json.RawMessage) (string, string, error) {
	var pair []string
	if err := json.Unmarshal(raw, &pair); err == nil {
		if len(pair) != 2 {
			return "", "", fmt.Errorf("a merge pair has %d parts, not 2", len(pair))
		}
		return pair[0], pair[1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", "", errors.New("a merge is neither \"a b\" nor [\"a\", \"b\"]")
	}
	parts := strings.Split(s, " ")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("merge %q is not two tokens separated by one space", s)
	}
	return parts[0], parts[1], nil
}
