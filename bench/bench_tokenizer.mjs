// bench_tokenizer.mjs: @huggingface/tokenizers' encode speed on a text file, for
// bench/bench_tokenizer.c (which runs this in the same `make bench` run).
//   ORACLE_NPM=DIR node bench_tokenizer.mjs TOKENIZER_DIR TEXT_FILE REPS
// Loads the tokenizer, encodes every document of the file (documents end with a
// form feed) once to warm up (JIT, caches), then REPS timed passes; prints
// "js_encode_seconds: MEDIAN MIN MAX" and the id count.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [dir, file, repsText] = process.argv.slice(2);
const npm = process.env.ORACLE_NPM;
const require = createRequire(path.join(path.resolve(npm), "package.json"));
const mod = await import(pathToFileURL(require.resolve("@huggingface/tokenizers")).href);
const { Tokenizer } = mod.default ?? mod;
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
const hasConfig = fs.existsSync(path.join(dir, "tokenizer_config.json"));
const config = hasConfig ? read("tokenizer_config.json") : {};
const tok = new Tokenizer(read("tokenizer.json"), config);
const documents = fs.readFileSync(file, "utf8").split("\f");
const pass = () =>
  documents.reduce((n, d) => n + tok.encode(d, { add_special_tokens: false }).ids.length, 0);
let ids = pass();
const times = [];
for (let r = 0; r < Number(repsText); r++) {
  const t0 = process.hrtime.bigint();
  ids = pass();
  times.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
times.sort((a, b) => a - b);
const [median, min, max] = [times[times.length >> 1], times[0], times[times.length - 1]];
console.log(`js_encode_seconds: ${median} ${min} ${max}`);
console.log(`js_ids: ${ids}`);
