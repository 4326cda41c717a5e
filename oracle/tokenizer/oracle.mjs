// oracle.mjs: what the JavaScript implementations say, for tests/tokenizer/compare.c.
//
//   ORACLE_NPM=DIR node oracle.mjs OUT_DIR CORPUS_DIR CONVERSATIONS_JSON NAME=TOKENIZER_DIR...
//
// ORACLE_NPM is the folder where package.json's pinned packages were installed
// (mk/tokenizer.mk installs them once into a cache folder).
// For each tokenizer, OUT_DIR/NAME.json holds:
//   encode: every corpus text, whole corpus files and seeded random mixtures of
//           slices, with the ids of @huggingface/tokenizers' encode (with and
//           without special tokens) and the decoded text (with and without
//           skip_special_tokens);
//   decode: id lists that decode to invalid UTF-8 (byte tokens) and seeded random
//           id lists, with their decoded text;
//   chat:   every conversation rendered by @huggingface/jinja with the tokenizer's
//           chat template (or the error the template raised), and the ids of the
//           rendered prompt encoded without special tokens.
// Decoding passes clean_up_tokenization_spaces: false, so the text is the
// tokenizers library's (transformers' clean-up is a separate, optional step).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const npm = process.env.ORACLE_NPM ?? path.dirname(new URL(import.meta.url).pathname);
const require = createRequire(path.join(path.resolve(npm), "package.json"));
// require.resolve finds the CommonJS build; its exports arrive as the default
const load = async (pkg) => {
  const mod = await import(pathToFileURL(require.resolve(pkg)).href);
  return mod.default ?? mod;
};
const { Tokenizer } = await load("@huggingface/tokenizers");
const { Template } = await load("@huggingface/jinja");
const versionOf = (pkg) =>
  JSON.parse(fs.readFileSync(path.join(npm, "node_modules", pkg, "package.json"), "utf8")).version;

// mulberry32: a small seeded generator, so every run makes the same cases.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function readCorpus(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".txt")).sort();
  const texts = [];
  for (const f of files) {
    const whole = fs.readFileSync(path.join(dir, f), "utf8");
    whole.split("\n%%%\n").forEach((t, i) => texts.push({ source: `${f}#${i + 1}`, text: t }));
    texts.push({ source: `${f} (whole file)`, text: whole });
  }
  const random = rng(20240315);
  const pick = (n) => Math.floor(random() * n);
  const separators = ["", " ", "  ", "\n", "\n\n", "\t", " \n "];
  for (let k = 0; k < 150; k++) {
    let text = "";
    const parts = 1 + pick(4);
    for (let p = 0; p < parts; p++) {
      const chars = Array.from(texts[pick(texts.length)].text); // code points, not halves
      const a = pick(chars.length + 1), b = a + pick(chars.length - a + 1);
      text += chars.slice(a, b).join("") + separators[pick(separators.length)];
    }
    texts.push({ source: `mixture ${k + 1}`, text });
  }
  return texts;
}

// GPT-2's byte table, to find the token of a single byte in a byte-level vocabulary.
function byteChar(b) {
  const printable = (x) => (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174;
  if (printable(b)) return String.fromCodePoint(b);
  let n = 0;
  for (let x = 0; x < b; x++) if (!printable(x)) n++;
  return String.fromCodePoint(256 + n);
}

function byteIds(tok, bytes) {
  const ids = [];
  for (const b of bytes) {
    const hex = "<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">";
    let id = tok.token_to_id(hex);
    if (id === undefined) id = tok.token_to_id(byteChar(b));
    if (id === undefined) return null;
    ids.push(id);
  }
  return ids;
}

const INVALID = [
  [0x80], [0xbf], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3, 0x28], [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf], [0xff], [0xfe, 0xff], [0xe2, 0x28, 0xa1],
  [0xf0, 0x28, 0x8c, 0x28], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xc3, 0xa9, 0xa9],
  [0xe0, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80],
];

// A decoded text holding U+0000 also goes as hex UTF-8 (KEY_hex): the C side's
// JSON reader ends strings at NUL.
function withHex(out, key, text) {
  out[key] = text;
  if (text.includes("\0")) out[key + "_hex"] = Buffer.from(text, "utf8").toString("hex");
  return out;
}

function decodeBoth(tok, ids, keys = ["text", "text_skip"]) {
  const out = {};
  withHex(out, keys[0],
    tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
  withHex(out, keys[1],
    tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }));
  return out;
}

function tokenString(v) {
  if (v && typeof v === "object") return v.content ?? null;
  return typeof v === "string" ? v : null;
}

function templatesOf(config) {
  const t = config.chat_template;
  if (typeof t === "string") return [{ name: "default", source: t }];
  if (Array.isArray(t)) return t.map((e) => ({ name: e.name, source: e.template }));
  return [];
}

// Where the JavaScript port is known to differ from the Rust library, the Rust
// behaviour is restored here, each case citing the Rust source:
// - ByteFallback (tokenizers/src/decoders/byte_fallback.rs): a run of "<0xXX>"
//   tokens that is not valid UTF-8 becomes one U+FFFD per byte
//   (`for _ in 0..previous_byte_tokens.len()`); the port's TextDecoder gives one
//   per maximal invalid subsequence instead. (A TextDecoder also drops a
//   leading U+FEFF unless told ignoreBOM; String::from_utf8 keeps it.)
// - Digits (tokenizers/src/pre_tokenizers/digits.rs) splits on
//   char::is_numeric, every Nd, Nl and No character ('١', '²'); the port's
//   regex \d is ASCII only.
function rustByteFallback(tokens) {
  const out = [];
  let bytes = [];
  const flush = () => {
    if (!bytes.length) return;
    try {
      out.push(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
        .decode(Uint8Array.from(bytes)));
    } catch {
      for (let i = 0; i < bytes.length; i++) out.push("\uFFFD");
    }
    bytes = [];
  };
  for (const token of tokens) {
    const m = token.length === 6 && /^<0x[0-9A-Fa-f]{2}>$/.test(token);
    if (m) bytes.push(parseInt(token.slice(3, 5), 16));
    else {
      flush();
      out.push(token);
    }
  }
  flush();
  return out;
}

function restoreRust(decoder) {
  if (!decoder) return;
  if (decoder.config?.type === "ByteFallback") decoder.decode_chain = rustByteFallback;
  for (const d of decoder.decoders ?? []) restoreRust(d);
}

function restoreRustPre(pre) {
  if (!pre) return;
  if (pre.config?.type === "Digits")
    pre.pattern = new RegExp(`[^\\p{N}]+|\\p{N}${pre.config.individual_digits ? "" : "+"}`, "gu");
  for (const p of pre.tokenizers ?? []) restoreRustPre(p);
}

function run(name, dir, texts, conversations, outDir) {
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const configPath = path.join(dir, "tokenizer_config.json");
  const config = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
  const tok = new Tokenizer(json, config);
  restoreRust(tok.decoder);
  restoreRustPre(tok.pre_tokenizer);
  const out = {
    tokenizer: name,
    oracle: `@huggingface/tokenizers ${versionOf("@huggingface/tokenizers")}, ` +
      `@huggingface/jinja ${versionOf("@huggingface/jinja")}`,
    encode: [], decode: [], chat: [],
  };
  for (const { source, text } of texts) {
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    const ids_special = tok.encode(text, { add_special_tokens: true }).ids;
    const entry = { source, text, ids, ids_special };
    if (ids.length) Object.assign(entry, decodeBoth(tok, ids_special, ["decoded", "decoded_skip"]));
    out.encode.push(entry);
  }
  const around = [tok.encode("ok ", { add_special_tokens: false }).ids,
    tok.encode(" done", { add_special_tokens: false }).ids];
  for (const bytes of INVALID) {
    const mid = byteIds(tok, bytes);
    if (!mid) continue;
    for (const ids of [mid, [...around[0], ...mid, ...around[1]]])
      out.decode.push({ source: `bytes ${bytes.map((b) => b.toString(16)).join(" ")}`, ids,
        ...decodeBoth(tok, ids) });
  }
  // random id lists: ids that exist, half from the added tokens
  const vocab = tok.get_vocab(true);
  const all = [...vocab.values()].sort((a, b) => a - b);
  const added = [...tok.get_added_tokens_decoder().keys()];
  const random = rng(7);
  for (let k = 0; k < 200; k++) {
    const n = 1 + Math.floor(random() * 24), ids = [];
    for (let i = 0; i < n; i++) {
      const fromAdded = added.length && random() < 0.2;
      const list = fromAdded ? added : all;
      ids.push(list[Math.floor(random() * list.length)]);
    }
    out.decode.push({ source: `random ids ${k + 1}`, ids, ...decodeBoth(tok, ids) });
  }
  for (const { name: tname, source } of templatesOf(config)) {
    const template = new Template(source);
    for (const conv of conversations) {
      for (const add_generation_prompt of [false, true]) {
        // the variables transformers' apply_chat_template passes: tools and
        // documents are None unless given; a special token the config lacks
        // stays undefined
        const vars = {
          messages: conv.messages, tools: null, documents: null, add_generation_prompt,
        };
        for (const key of ["bos_token", "eos_token"]) {
          const value = tokenString(config[key]);
          if (value !== null) vars[key] = value;
        }
        Object.assign(vars, conv.variables ?? {});
        const entry = { template: tname, conversation: conv.name, add_generation_prompt };
        try {
          entry.rendered = template.render(vars);
          entry.ids = tok.encode(entry.rendered, { add_special_tokens: false }).ids;
        } catch (e) {
          entry.error = String(e.message ?? e);
        }
        out.chat.push(entry);
      }
    }
  }
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(out));
  return out;
}

const [outDir, corpusDir, conversationsPath, ...specs] = process.argv.slice(2);
if (!specs.length) {
  console.error("usage: node oracle.mjs OUT_DIR CORPUS_DIR CONVERSATIONS_JSON NAME=DIR...");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
const texts = readCorpus(corpusDir);
const conversations = JSON.parse(fs.readFileSync(conversationsPath, "utf8"));
for (const spec of specs) {
  const eq = spec.indexOf("=");
  const name = spec.slice(0, eq), dir = spec.slice(eq + 1);
  const t0 = Date.now();
  const out = run(name, dir, texts, conversations, outDir);
  console.log(`oracle: ${name}: ${out.encode.length} texts, ${out.decode.length} id lists, ` +
    `${out.chat.length} renders (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
