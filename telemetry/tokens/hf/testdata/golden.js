// Generates this package's test tokenizers and their golden token ids with the reference
// implementation: Hugging Face's tokenizers (the Rust library, through its Node.js binding, npm
// package "tokenizers" 0.23.2, Apache-2.0).
//
//   d=$(mktemp -d); (cd $d && npm install tokenizers@0.23.2)
//   NODE_PATH=$d/node_modules node golden.js golden             # golden.json only
//   NODE_PATH=$d/node_modules node golden.js tokenizers MODEL.gguf  # the tokenizers too
//
// "tokenizers" rebuilds the tokenizer files:
//   - stories260k-legacy.json and stories260k-metaspace.json: the 512-token SentencePiece BPE
//     vocabulary of Andrej Karpathy's stories260K model (llama2.c, MIT licence; the GGUF is the
//     one llama.cpp's CI uses), converted the way transformers' LlamaConverter does (vocabulary
//     and scores from the model, merges by transformers' SentencePieceExtractor), in the legacy
//     Llama-2 shape (Prepend + Replace normalizer) and in the Metaspace shape (Mistral and newer
//     conversions);
//   - bytelevel-gpt2.json, bytelevel-llama3.json, bytelevel-qwen2.json: one byte-level BPE the
//     reference trainer learned from shadow/workload/corpus.txt and this script,
//     cut to its first 1500 merges, completed with the 256 byte symbols, and set in the GPT-2,
//     Llama-3 and Qwen2 pipelines (their pre-tokenizer patterns, normalizers, special tokens,
//     merge formats and ignore_merges as those models' tokenizer.json files have them);
//   - misc-bytelevel.json, misc-subword.json, misc-words.json and misc-meta.json: the remaining supported components, set up to
//     exercise them rather than to resemble a model: the Strip, Lowercase, NFKC, NFD and Replace
//     normalizers, the Digits, Punctuation, Whitespace, WhitespaceSplit and Split (every
//     behavior, inverted) pre-tokenizers, added tokens with lstrip, rstrip, single_word and
//     normalized, and a BPE with unk_token, continuing_subword_prefix and end_of_word_suffix.
// "golden" encodes every text in golden-texts.json with each tokenizer (no special tokens added:
// llmtap counts the text, not a chat template) and writes golden.json.
"use strict";
process.chdir(__dirname); // every file below is in testdata/
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

function readGGUF(path) {
  const b = fs.readFileSync(path);
  let o = 0;
  const u32 = () => { const v = b.readUInt32LE(o); o += 4; return v; };
  const u64 = () => { const v = Number(b.readBigUInt64LE(o)); o += 8; return v; };
  const str = () => { const n = u64(); const s = b.toString("utf8", o, o + n); o += n; return s; };
  const val = (t) => {
    switch (t) {
      case 0: return b.readUInt8(o++);
      case 1: return b.readInt8(o++);
      case 2: { const v = b.readUInt16LE(o); o += 2; return v; }
      case 3: { const v = b.readInt16LE(o); o += 2; return v; }
      case 4: return u32();
      case 5: { const v = b.readInt32LE(o); o += 4; return v; }
      case 6: { const v = b.readFloatLE(o); o += 4; return v; }
      case 7: return b.readUInt8(o++) !== 0;
      case 8: return str();
      case 9: { const et = u32(); const n = u64(); const a = []; for (let i = 0; i < n; i++) a.push(val(et)); return a; }
      case 10: return u64();
      case 11: { const v = Number(b.readBigInt64LE(o)); o += 8; return v; }
      case 12: { const v = b.readDoubleLE(o); o += 8; return v; }
      default: throw new Error("gguf type " + t);
    }
  };
  if (b.toString("latin1", 0, 4) !== "GGUF") throw new Error("not GGUF");
  o = 4; u32(); u64(); const nkv = u64();
  const kv = {};
  for (let i = 0; i < nkv; i++) { const k = str(); kv[k] = val(u32()); }
  return kv;
}

// transformers' SentencePieceExtractor.extract with scores (stable sorts, as Python's).
function spmMerges(pieces, scores) {
  const vocab = new Map(pieces.map((p, i) => [p, i]));
  let merges = [];
  pieces.forEach((merge, i) => {
    const cps = Array.from(merge);
    const local = [];
    for (let k = 1; k < cps.length; k++) {
      const l = cps.slice(0, k).join(""), r = cps.slice(k).join("");
      if (vocab.has(l) && vocab.has(r)) local.push([l, r, scores[i]]);
    }
    local.sort((a, b) => (vocab.get(a[0]) - vocab.get(b[0])) || (vocab.get(a[1]) - vocab.get(b[1])));
    merges.push(...local);
  });
  merges.sort((a, b) => b[2] - a[2]);
  return merges.map((m) => [m[0], m[1]]);
}

function added(id, content) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

function bpe(vocab, merges, extra) {
  return Object.assign({ type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges }, extra);
}

function tokenizerFile(model, normalizer, pre, addedTokens) {
  return { version: "1.0", truncation: null, padding: null, added_tokens: addedTokens, normalizer,
    pre_tokenizer: pre, post_processor: null, decoder: null, model };
}

function save(name, obj) {
  // Load it with the reference and save it back, so the file is in the reference's own form.
  const t = Tokenizer.fromString(JSON.stringify(obj));
  t.save(name, false);
  console.log("wrote", name);
}

function makeSPM(gguf) {
  const kv = readGGUF(gguf);
  const pieces = kv["tokenizer.ggml.tokens"], scores = kv["tokenizer.ggml.scores"];
  const vocab = {};
  pieces.forEach((p, i) => { vocab[p] = i; });
  const merges = spmMerges(pieces, scores);
  const model = bpe(vocab, merges, { unk_token: "<unk>", fuse_unk: true, byte_fallback: true });
  const specials = [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")];
  save("stories260k-legacy.json", tokenizerFile(model,
    { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "\u2581" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
    null, specials));
  save("stories260k-metaspace.json", tokenizerFile(model, null,
    { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false }, specials));
}

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// GPT-2's bytes_to_unicode: the 256 symbols byte-level BPE spells bytes with.
function byteSymbols() {
  const bs = [];
  for (let i = 33; i <= 126; i++) bs.push(i);
  for (let i = 161; i <= 172; i++) bs.push(i);
  for (let i = 174; i <= 255; i++) bs.push(i);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  return cs.map((c) => String.fromCodePoint(c));
}

function makeByteLevel() {
  const files = ["../../../../shadow/workload/corpus.txt", "golden.js"];
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const t = Tokenizer.fromString(JSON.stringify(tokenizerFile(bpe({}, []), null, byteLevel, [])));
  t.train(files);
  t.save("/tmp/llmtap-trained.json", false);
  const trained = JSON.parse(fs.readFileSync("/tmp/llmtap-trained.json", "utf8")).model;
  const K = 1500;
  const merges = trained.merges.slice(0, K).map((m) => (Array.isArray(m) ? m : m.split(" ")));
  const base = Object.keys(trained.vocab).length - trained.merges.length; // the alphabet comes first
  const vocab = {};
  for (const [tok, id] of Object.entries(trained.vocab)) if (id < base + K) vocab[tok] = id;
  let next = base + K;
  for (const s of byteSymbols()) if (!(s in vocab)) vocab[s] = next++;
  const noPrefix = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false };
  const split = (re) => ({ type: "Split", pattern: { Regex: re }, behavior: "Isolated", invert: false });
  const specials = (names) => names.map((n, i) => added(next + i, n));
  // GPT-2: merges as "a b" strings, as in GPT-2's own tokenizer.json.
  save("bytelevel-gpt2.json", tokenizerFile(bpe(vocab, merges.map((m) => m.join(" "))), null, byteLevel,
    specials(["<|endoftext|>"])));
  save("bytelevel-llama3.json", tokenizerFile(bpe(vocab, merges, { ignore_merges: true }), null,
    { type: "Sequence", pretokenizers: [split(LLAMA3), noPrefix] },
    specials(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])));
  save("bytelevel-qwen2.json", tokenizerFile(bpe(vocab, merges), { type: "NFC" },
    { type: "Sequence", pretokenizers: [split(QWEN2), noPrefix] },
    specials(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])));
}

function makeMisc() {
  const gpt2 = JSON.parse(fs.readFileSync("bytelevel-gpt2.json", "utf8"));
  const next = Object.keys(gpt2.model.vocab).length;
  const tok = (id, content, opts) => Object.assign(added(id, content), opts);
  save("misc-bytelevel.json", tokenizerFile(gpt2.model,
    { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" },
      { type: "Replace", pattern: { Regex: "\\s{3,}" }, content: "  " }] },
    { type: "Sequence", pretokenizers: [{ type: "Digits", individual_digits: true },
      { type: "Punctuation", behavior: "MergedWithPrevious" },
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: false }] },
    [tok(next, "<mask>", { lstrip: true }), tok(next + 1, "[X]", { rstrip: true }),
      tok(next + 2, "word", { single_word: true, normalized: true, special: false }),
      tok(next + 3, "Café", { normalized: true, special: false })]));

  // A hand-made subword BPE: letters, "##" continuations, "</w>" word ends, and a few merges.
  const vocab = { "[UNK]": 0 };
  for (const l of "abcdefghijklmnopqrstuvwxyz-'.,\u2581") {
    for (const s of [l, l + "</w>", "##" + l, "##" + l + "</w>"]) vocab[s] = Object.keys(vocab).length;
  }
  const merges = [["t", "##h"], ["th", "##e</w>"], ["a", "##n"], ["an", "##d</w>"], ["i", "##n"], ["##n", "##g</w>"], ["in", "##g</w>"], ["##o", "##n</w>"]];
  for (const [a, b] of merges) {
    const m = a + b.slice(2);
    if (!(m in vocab)) vocab[m] = Object.keys(vocab).length;
  }
  const split = (pattern, behavior, invert) => ({ type: "Split", pattern, behavior, invert: !!invert });
  save("misc-subword.json", tokenizerFile(
    bpe(vocab, merges, { unk_token: "[UNK]", fuse_unk: true, continuing_subword_prefix: "##", end_of_word_suffix: "</w>" }),
    { type: "Sequence", normalizers: [{ type: "NFD" }, { type: "Replace", pattern: { String: "’" }, content: "'" },
      { type: "Strip", strip_left: true, strip_right: false }] },
    { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, split({ String: "'" }, "MergedWithPrevious"),
      split({ Regex: "\\." }, "Contiguous"), split({ Regex: "[a-z]+" }, "MergedWithPrevious", true),
      split({ String: "x" }, "MergedWithNext"), { type: "Digits", individual_digits: false }] },
    [tok(Object.keys(vocab).length, "[SEP]", {})]));
  save("misc-words.json", tokenizerFile(bpe(vocab, merges, { unk_token: "[UNK]", continuing_subword_prefix: "##",
    end_of_word_suffix: "</w>" }), null, { type: "Whitespace" }, []));
  save("misc-meta.json", tokenizerFile(bpe(vocab, merges, { unk_token: "[UNK]", continuing_subword_prefix: "##",
    end_of_word_suffix: "</w>" }), { type: "Sequence", normalizers: [{ type: "Strip", strip_left: true, strip_right: true }, { type: "Lowercase" }] },
    { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true }, []));
}

async function makeGolden() {
  const texts = JSON.parse(fs.readFileSync("golden-texts.json", "utf8"));
  const names = fs.readdirSync(".").filter((f) => /^(stories260k|bytelevel|misc)-.*\.json$/.test(f)).sort();
  const out = {};
  for (const name of names) {
    const t = Tokenizer.fromFile(name);
    out[name] = [];
    for (const text of texts) {
      const e = await t.encode(text, null, { addSpecialTokens: false });
      out[name].push({ text, ids: e.getIds() });
    }
  }
  fs.writeFileSync("golden.json", JSON.stringify(out, null, 1) + "\n");
  console.log("wrote golden.json");
}

(async () => {
  const [mode, gguf] = process.argv.slice(2);
  if (mode === "tokenizers") {
    makeSPM(gguf);
    makeByteLevel();
  }
  if (mode === "tokenizers" || mode === "misc") makeMisc();
  await makeGolden();
})();
