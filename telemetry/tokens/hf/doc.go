// Package hf reads a Hugging Face tokenizer file (tokenizer.json) and encodes text with it, so
// that llmtap can count tokens the way a model's own tokenizer does when its server reports no
// usage. It is a reader of the common byte-pair-encoding pipelines, written against the
// reference implementation (Hugging Face's tokenizers) and checked against token ids that
// implementation produced (testdata/golden.js):
//
//   - byte-level BPE, as GPT-2, Llama 3, Qwen2 and most recent models use: a ByteLevel
//     pre-tokenizer, alone (GPT-2's pattern) or after a Split pre-tokenizer with the model's
//     pattern, and vocabularies spelled in GPT-2's byte symbols;
//   - SentencePiece-style BPE, as Llama 2 and Mistral use: "▁" for spaces (a Prepend + Replace
//     normalizer, or a Metaspace pre-tokenizer) and byte fallback (<0xXX> tokens) for
//     characters the vocabulary lacks.
//
// Supported components: the BPE model (merges as "a b" strings or [a, b] pairs, unk_token,
// fuse_unk, byte_fallback, ignore_merges, continuing_subword_prefix, end_of_word_suffix);
// the normalizers NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace and Sequence; the
// pre-tokenizers ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit,
// Punctuation and Sequence; added tokens (special or not, normalized or not, lstrip, rstrip,
// single_word). A file with any other component type is refused with an error that names it
// (WordPiece, Unigram and WordLevel models, BERT and precompiled normalizers among them).
// Post-processors and decoders are not read: counting the tokens of a text adds no template
// tokens (BOS, chat markup), as encoding with add_special_tokens=False does. BPE dropout is
// ignored, as a server does at inference.
//
// Patterns run on github.com/dlclark/regexp2 (the reference uses Oniguruma; both have the
// look-ahead the byte-level patterns need). Invalid UTF-8 in the text is read as U+FFFD.
package hf
