#!/usr/bin/env bash
# `tinyllm info` and `tinyllm logits` on every checkpoint of fixtures/L7.9: the
# parameter count is HF's (fixtures/L7.9/llama.json), --json holds the fields the
# milestone reads, a folder with only config.json is counted from the config
# (SmolLM2: 134,515,008), the logits written with --out are HF's (the first row
# of the fixture's ids, within the fixture's tolerance) and the argmax printed
# without it is theirs; bad folders exit 1 (said as generate says them: a
# missing path, a file, an empty or duplicate-keyed config.json, a missing
# shard, weights that are a dangling link or a folder; the text of the folder's
# files a message quotes, a tensor name, is escaped), usage errors 2 (bad ids and ids outside the vocabulary
# included); --out is checked before the run and written through a name of its own.
# Run by `make test-tinyllm`; TINYLLM is the binary, FIXTURES the fixtures folder.
set -u
TINYLLM=${TINYLLM:-build/bin/tinyllm}
FIXTURES=${FIXTURES:-fixtures}
work=$(mktemp -d /tmp/tl-info-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../lib/check.sh"

# The fixture's facts, read with Python's standard library only.
facts() {   # CHECKPOINT -> "count ids(comma) argmax(comma) vocab count(grouped: 51,360)"
    python3 - "$FIXTURES/L7.9" "$1" <<'PY'
import json, struct, sys, array
root, name = sys.argv[1], sys.argv[2]
meta = json.load(open(root + "/llama.json"))
data = open(root + "/llama.safetensors", "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
def tensor(key):
    e = header[key]
    a, b = e["data_offsets"]
    arr = array.array("q" if e["dtype"] == "I64" else "f")
    arr.frombytes(data[8 + n + a:8 + n + b])
    return arr, e["shape"]
ids, (B, T) = tensor(name + ".ids")
logits, (_, _, V) = tensor(name + ".logits")
row = ids[:T]
best = [max(range(V), key=lambda v: (logits[t * V + v], -v)) for t in range(T)]
count = meta["checkpoints"][name]["hf_param_count"]
print(count, ",".join(map(str, row)), ",".join(map(str, best)), V, f"{count:,}")
PY
}

# compare OUT.safetensors CHECKPOINT: the written logits vs row 0 of HF's.
compare() {
    python3 - "$FIXTURES/L7.9" "$2" "$1" <<'PY'
import json, struct, sys, array
root, name, out = sys.argv[1], sys.argv[2], sys.argv[3]
def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]
h, d = load(out)
assert list(h.keys()) == ["__metadata__", "logits"] or list(h.keys()) == ["logits"], h.keys()
e = h["logits"]
assert e["dtype"] == "F32", e
got = array.array("f"); got.frombytes(d[e["data_offsets"][0]:e["data_offsets"][1]])
gh, gd = load(root + "/llama.safetensors")
g = gh[name + ".logits"]
B, T, V = g["shape"]
assert e["shape"] == [1, T, V], (e["shape"], g["shape"])
want = array.array("f"); want.frombytes(gd[g["data_offsets"][0]:g["data_offsets"][1]])
tol = json.load(open(root + "/llama.json"))["tolerances"]["test_tiny_hf_logits_golden"]
worst = max(abs(a - b) / (tol["atol"] + tol["rtol"] * abs(b)) for a, b in zip(got, want[:T * V]))
print("worst %.4f of the tolerance" % worst)
sys.exit(0 if worst <= 1 else 1)
PY
}

for ckpt in $(python3 -c "import json,sys; print(' '.join(sorted(json.load(open(sys.argv[1]))['checkpoints'])))" "$FIXTURES/L7.9/llama.json"); do
    dir=$FIXTURES/L7.9/$ckpt
    read -r count ids best vocab grouped <<<"$(facts "$ckpt")"
    check "info_$ckpt" 0 "parameters: $grouped" "architecture:" "weights:" -- "$TINYLLM" info "$dir"
    json=$("$TINYLLM" info "$dir" --json 2>&1)
    if python3 -c "import json,sys; o=json.loads(sys.argv[1]); assert o['param_count']==$count and o['vocab_size']==$vocab and o['num_hidden_layers']>0 and o['model_type'] in ('llama','mistral','qwen2','deepseek_v3'), o" "$json" 2>/dev/null
    then ok; else bad "info_json_$ckpt" "$json"; fi
    "$TINYLLM" logits "$dir" --ids "$ids" --out "$work/$ckpt.safetensors" >/dev/null 2>"$work/err"
    if [ $? = 0 ] && out=$(compare "$work/$ckpt.safetensors" "$ckpt"); then ok
    else bad "logits_out_$ckpt" "$(cat "$work/err") $out"; fi
    got=$("$TINYLLM" logits "$dir" --ids "$ids" | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {printf "%s%s", sep, $3; sep=","}')
    if [ "$got" = "$best" ]; then ok; else bad "logits_argmax_$ckpt: $got, HF's $best"; fi
done

# A folder with only config.json: the count from the config alone.
mkdir "$work/smollm2" && cp "$FIXTURES/L7.9/configs/smollm2-135m-instruct.json" "$work/smollm2/config.json"
check config_only_is_counted_from_the_config 0 "parameters: 134,515,008" "from config.json alone" \
    "30 layers" "9 query heads, 3 kv heads, head_dim 64" -- "$TINYLLM" info "$work/smollm2"
check config_only_json 0 '"param_count":	134515008' '"param_count_from":	"config"' \
    -- "$TINYLLM" info "$work/smollm2" --json
mkdir "$work/dsv3" && cp "$FIXTURES/L7.9/configs/deepseek-v3-bf16.json" "$work/dsv3/config.json"
check config_only_deepseek 0 "parameters: 671,026,404,352" "MLA" "256 experts" \
    -- "$TINYLLM" info "$work/dsv3"

# Bad folders: a clear message, exit 1, the same one from every verb.
mkdir "$work/empty"
check empty_folder_fails 1 "no config.json" -- "$TINYLLM" info "$work/empty"
check missing_folder_fails 1 "$work/absent does not exist" -- "$TINYLLM" info "$work/absent"
check logits_of_a_missing_folder_fails 1 "$work/absent does not exist" \
    -- "$TINYLLM" logits "$work/absent" --ids 1
echo '{}' >"$work/afile"
check info_of_a_file_fails 1 "$work/afile is a file, not a folder" -- "$TINYLLM" info "$work/afile"
check logits_of_a_file_fails 1 "$work/afile is a file, not a folder" \
    -- "$TINYLLM" logits "$work/afile" --ids 1
mkdir "$work/emptycfg" && : >"$work/emptycfg/config.json"
check info_of_an_empty_config_names_it 1 "$work/emptycfg/config.json is empty" \
    -- "$TINYLLM" info "$work/emptycfg"
# A key given twice: Python's json.load (HF) takes the last, cJSON the first.
mkdir "$work/dupkey" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/dupkey/"
sed -i 's/^}$/, "rms_norm_eps": 0.5}/' "$work/dupkey/config.json"
check info_of_a_config_with_a_key_twice_fails 1 \
    "$work/dupkey/config.json gives the key \"rms_norm_eps\" twice" \
    -- "$TINYLLM" info "$work/dupkey"
check logits_of_a_config_with_a_key_twice_fails 1 \
    "$work/dupkey/config.json gives the key \"rms_norm_eps\" twice" \
    -- "$TINYLLM" logits "$work/dupkey" --ids 1
mkdir "$work/dupnested" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/dupnested/"
sed -i 's/"rope_scaling": null/"rope_scaling": {"type": "linear", "factor": 2.0, "factor": 4.0}/' \
    "$work/dupnested/config.json"
check info_of_a_nested_key_twice_fails 1 'the key rope_scaling."factor" twice' \
    -- "$TINYLLM" info "$work/dupnested"
# cJSON cuts a string at \u0000 ("a\u0000b" and "a\u0000c" become one key); json.load does not.
mkdir "$work/nulkey" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/nulkey/"
sed -i 's/^}$/, "x\\u0000a": 1, "x\\u0000b": 2}/' "$work/nulkey/config.json"
check info_of_a_config_with_a_nul_fails 1 "$work/nulkey/config.json holds \\u0000 in a string" \
    "remove it" -- "$TINYLLM" info "$work/nulkey"
# A sharded checkpoint missing a shard, or holding only its .part: the shard named.
sharded=$FIXTURES/L7.9/llama-bf16-sharded
shard=$(python3 -c 'import json, sys
print(sorted(set(json.load(open(sys.argv[1]))["weight_map"].values()))[-1])' \
    "$sharded/model.safetensors.index.json")
mkdir "$work/noshard" && cp "$sharded/"* "$work/noshard/" && rm "$work/noshard/$shard"
check info_of_a_missing_shard_names_it 1 "the shard $shard is missing" "tinyllm pull" \
    -- "$TINYLLM" info "$work/noshard"
mv "$work/noshard" "$work/partshard" && cp "$sharded/$shard" "$work/partshard/$shard.part"
check logits_of_a_shard_left_as_part_names_it 1 "the shard $shard is missing" \
    "only its .part" "tinyllm pull" -- "$TINYLLM" logits "$work/partshard" --ids 1
mkdir "$work/gemma" && echo '{"model_type": "gemma"}' >"$work/gemma/config.json"
check unsupported_model_type_fails 1 '"gemma" is not supported' -- "$TINYLLM" info "$work/gemma"
mkdir "$work/mismatch" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/mismatch/"
sed -i 's/"intermediate_size": 64/"intermediate_size": 48/' "$work/mismatch/config.json"
check info_of_a_checkpoint_that_does_not_fit_fails 1 "gate_proj.weight has shape [64, 32]" \
    -- "$TINYLLM" info "$work/mismatch"
check logits_of_a_checkpoint_that_does_not_fit_fails 1 "the config gives [48, 32]" \
    -- "$TINYLLM" logits "$work/mismatch" --ids 1,2
# A config of another model, far larger than the weights: building it first ran out of
# memory, a message that named neither config.json nor what to do. The mismatch above (a
# config within twice the weights) keeps the loader's words; its check holds that.
mkdir "$work/huge" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/huge/"
sed -i -e 's/"hidden_size": 32/"hidden_size": 262144/' \
    -e 's/"intermediate_size": 64/"intermediate_size": 1048576/' \
    -e 's/"num_hidden_layers": 2/"num_hidden_layers": 200/' "$work/huge/config.json"
for verb in info logits; do
    args=(); [ $verb = logits ] && args=(--ids 1,2)
    check ${verb}_of_another_models_config_says_so 1 \
        "$work/huge/config.json describes a model of" "but the weights hold 51368 values" \
        "fetch both again" "The load said: " -- "$TINYLLM" $verb "$work/huge" "${args[@]}"
done
out=$("$TINYLLM" info "$work/mismatch" 2>&1)
[[ $out != *"describes a model of"* ]] && ok ||
    bad "info_of_a_config_off_by_a_size_keeps_the_loaders_words" "$out"
# a config value the model cannot be built with (DeepSeek-V3's top_k past the experts of
# its kept groups): the builder's words, and where the value comes from
cp -r "$FIXTURES/L7.9/deepseek-v3" "$work/topk"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); d["num_experts_per_tok"] = 5
json.dump(d, open(sys.argv[1], "w"))' "$work/topk/config.json"
check info_of_a_config_the_model_cannot_be_built_with 1 "top_k 5 is more than the 4 experts" \
    "the sizes come from $work/topk/config.json" -- "$TINYLLM" info "$work/topk"
check logits_unwritable_out_fails 1 "$work/no/such/dir" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --out "$work/no/such/dir/x.safetensors"
check logits_out_to_a_folder_fails_before_the_run 1 "--out $work is a folder" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --out "$work"
# --out writes through a name of its own: a link named x.safetensors.tmp is left alone.
echo precious >"$work/victim" && ln -s "$work/victim" "$work/x.safetensors.tmp"
check logits_out_beside_a_link 0 "wrote $work/x.safetensors" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --out "$work/x.safetensors"
[ "$(cat "$work/victim")" = precious ] && [ -L "$work/x.safetensors.tmp" ] && ok \
    || bad "logits --out wrote through a link named x.safetensors.tmp"
# --out is renamed into place: a device, a link or a file of the checkpoint read would be
# replaced by it, so each is refused before the run and left as it was.
mknod "$work/nulldev" c 1 3 2>/dev/null || mkfifo "$work/nulldev"
check logits_out_to_a_device_is_refused 1 "--out $work/nulldev is not a regular file" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --out "$work/nulldev"
[ ! -f "$work/nulldev" ] && [ -e "$work/nulldev" ] && ok || bad "--out replaced a device node"
echo kept >"$work/link-target" && ln -s "$work/link-target" "$work/out-link"
check logits_out_to_a_link_is_refused 1 "is a symbolic link" "give the path it leads to" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --out "$work/out-link"
[ -L "$work/out-link" ] && [ "$(cat "$work/link-target")" = kept ] && ok ||
    bad "--out replaced a link or its target"
cp -r "$FIXTURES/L7.9/llama-gqa" "$work/own" && ln "$work/own/config.json" "$work/hardlink.json"
for target in "$work/own/model.safetensors" "$work/own/../own/config.json" "$work/hardlink.json"; do
    check "logits_out_onto_the_checkpoint_read: $target" 1 "of the checkpoint $work/own" \
        "which this run reads" -- "$TINYLLM" logits "$work/own" --ids 1 --out "$target"
done
cmp -s "$work/own/model.safetensors" "$FIXTURES/L7.9/llama-gqa/model.safetensors" &&
    cmp -s "$work/own/config.json" "$FIXTURES/L7.9/llama-gqa/config.json" && ok ||
    bad "--out overwrote a file of the checkpoint it read"
# model.safetensors that is a dangling link (a blob missing from the cache) or a folder:
# said as such, not as "no weights"; a stale index beside model.safetensors is not read.
mkdir "$work/dangling" && cp "$FIXTURES/L7.9/llama-gqa/config.json" "$work/dangling/"
ln -s "$work/no-such-blob" "$work/dangling/model.safetensors"
check info_of_a_dangling_weights_link 1 "symlink to a file that does not exist" \
    -- "$TINYLLM" info "$work/dangling"
rm "$work/dangling/model.safetensors" && mkdir "$work/dangling/model.safetensors"
check logits_of_weights_that_are_a_folder 1 "model.safetensors: is a folder" \
    -- "$TINYLLM" logits "$work/dangling" --ids 1
mkdir "$work/stale" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/stale/"
cp "$sharded/model.safetensors.index.json" "$work/stale/"
check info_ignores_a_stale_index_beside_model_safetensors 0 "parameters: 51,360" \
    -- "$TINYLLM" info "$work/stale"
# pad_token_id -1, as early LLaMA conversions wrote it, is no id (transformers loads it).
mkdir "$work/pad" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/pad/"
sed -i 's/^}$/, "pad_token_id": -1}/' "$work/pad/config.json"
check logits_with_pad_token_id_minus_1 0 "next (argmax)" -- "$TINYLLM" logits "$work/pad" --ids 1,2
# A tensor name from the file is shown escaped in a refusal, as inspect shows it: no byte
# of it (ESC, a newline) reaches the terminal, whether the tensor is one the model does
# not have or one in a dtype tinyllm does not compute with.
for kind in extra int; do
    mkdir "$work/esc-$kind" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/esc-$kind/"
    python3 - "$work/esc-$kind/model.safetensors" "$kind" <<'PY'
import json, struct, sys
path, kind = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header, body = json.loads(data[8:8 + n]), data[8 + n:]
end = max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
header["\x1b[31mred\nfake: line"] = {"dtype": "F32" if kind == "extra" else "I32",
                                     "shape": [1], "data_offsets": [end, end + 4]}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + body + bytes(4))
PY
    out=$("$TINYLLM" logits "$work/esc-$kind" --ids 1 2>&1)
    if [ $? = 1 ] && grep -qF '\x1b[31mred\x0afake: line' <<<"$out" \
        && ! grep -q "$(printf '\033')" <<<"$out" && [ "$(wc -l <<<"$out")" = 1 ]; then ok
    else bad "logits_escapes_a_tensor_name_($kind)" "$(cat -v <<<"$out")"; fi
done
# Every verb prints its error clean, whatever text of the folder's files it quotes: a
# model_type, an index's shard name.
mkdir "$work/esc-type" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/esc-type/"
sed -i 's/"model_type": "llama"/"model_type": "\\u001b[31mgemma"/' "$work/esc-type/config.json"
cp -r "$sharded" "$work/esc-shard"
sed -i 's/"model-00002-of-00003.safetensors"/"\\u001b[31mx.safetensors"/' \
    "$work/esc-shard/model.safetensors.index.json"
for run in "info $work/esc-type" "logits $work/esc-type --ids 1" "info $work/esc-shard" \
           "generate $work/esc-type --ids 1" "chat $work/esc-type"; do
    out=$($TINYLLM $run 2>&1 </dev/null)
    if [ $? = 1 ] && grep -qF '\x1b[31m' <<<"$out" && ! grep -q "$(printf '\033')" <<<"$out"
    then ok; else bad "escaped error of tinyllm $run" "$(cat -v <<<"$out")"; fi
done

# Usage errors: exit 2, bad ids and ids outside the vocabulary among them (as in generate).
check logits_id_out_of_range_is_usage 2 "id 512" "outside the vocabulary" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1,512
check logits_bad_ids_are_usage 2 "item 2 is not a token id" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1,x,3
for ids in -4 -1,5 5,,6 5x ""; do
    check "logits_ids_'$ids'_are_usage" 2 "not a token id" \
        -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids "$ids"
done
check info_without_dir_is_usage 2 "usage: tinyllm info DIR" -- "$TINYLLM" info
check info_with_two_dirs_is_usage 2 "unexpected argument" -- "$TINYLLM" info a b
check logits_without_ids_is_usage 2 "--ids is required" -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa"
check logits_unknown_option_is_usage 2 "unexpected argument '--bogus'" \
    -- "$TINYLLM" logits "$FIXTURES/L7.9/llama-gqa" --ids 1 --bogus
check help_lists_info_and_logits 0 "info" "logits" -- "$TINYLLM" --help
check info_help 0 "--json" -- "$TINYLLM" info --help

summary "tinyllm info, logits"
