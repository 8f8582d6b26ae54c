// Package workload builds the synthetic requests of a benchmark: prompts with an exact number
// of tokens, input and output lengths drawn from seeded distributions, prompts that share
// prefixes the way a Mooncake trace's hash_ids say, and request bodies for the APIs llmtap
// decodes, with AIPerf's --extra-inputs merged in. [Spec] is a whole load as a user writes it
// (the proxy's shadow config embeds it; bench's flags fill it), with its defaults and checks.
//
// # Prompts
//
// Prompts are cut from an embedded public-domain text: the opening of chapter I of Lewis
// Carroll's "Alice's Adventures in Wonderland" (1865; Project Gutenberg eBook #11), with its
// whitespace collapsed to single spaces. Counts are in OpenAI's o200k_base encoding, the
// tokenizer llmtap's measuring engine counts with (telemetry/tokens), so a prompt built for N
// tokens is counted as exactly N input tokens by llmtap, and by a server using o200k_base.
//
// Exactness comes from how o200k_base splits text before its byte-pair merges: its
// pre-tokenizer never joins a space to the non-space text before it, so text made of pieces
// " word" (a space, then a run of non-space characters) tokenizes piece by piece, and a
// prompt's count is the sum of its pieces' counts. The corpus is cut into such pieces and each
// is counted once; a prompt is a run of consecutive pieces whose counts add up to N exactly,
// skipping a piece that would overshoot (single-token pieces are common, so the sum always
// lands). The prompt's first piece is written without its leading space, and counted so.
// Tests tokenize built prompts to check the count.
//
// # Shared prefixes
//
// A Mooncake trace gives each request hash_ids: one id per 512-token block of its prompt, equal
// ids meaning equal blocks (a prefix cache hit). [Corpus.Blocks] turns an id into block text
// deterministically, by starting the block at a corpus position derived from the id, so the
// same id yields the same 512-token text in every request and every run. The last block holds
// whatever the input length leaves over, as AIPerf's mooncake_trace replay does.
package workload
