#!/usr/bin/env bash
# `tinyllm generate` and `tinyllm chat` on the checkpoints of fixtures/L7.9:
# - the greedy ids after each checkpoint's prompt_ids equal the oracle's
#   (llama.json: greedy_ids without a cache, greedy_ids_cached with one), through
#   the KV cache and with --no-cache, in f32 and (where the checkpoint is bf16)
#   in its own dtype; --json holds the fields the milestone's chapter lists;
# - --prompt goes through the tokenizer (the ids are `tinyllm tokenize`'s), --chat
#   through the chat template (the rendered text is `tinyllm chat-template`'s),
#   and the reply's ids are those of --ids with the same prompt ids;
# - chat keeps the conversation: a second turn runs only its new tokens;
# - a stop id ends the reply (generation_config.json's), -n bounds it;
# - a folder that is not a checkpoint, a file, one without weights, weights
#   stored in a dtype tinyllm does not compute with (FP8, a quantization's
#   integers), an unknown --dtype, a prompt longer than the context and bad ids
#   are refused clearly; so are a JSON file of the checkpoint with a key given
#   twice, a generation_config.json that is not an object or whose eos_token_id
#   is malformed or lists more stop ids than tinyllm keeps, a prompt token the
#   tokenizer gives an id past the vocabulary, and a broken chat template
#   (named as tokenizer_config.json's; chat refuses it at startup); an --json
#   that cannot be written is said before the load, and one is written through a
#   new name of its own (a file or link named report.json.tmp is left alone);
# - a checkpoint file that is a FIFO or a folder is said as such (never waited on);
# - output that cannot be written to stdout (a full disk) fails the run;
# - the load shows its progress on a terminal, and not in a pipe;
# - Ctrl-C (SIGINT) stops a run with exit 130 and its timings so far;
# - --help works for every verb.
# Run by `make test-tinyllm`; TINYLLM is the binary, FIXTURES the fixtures folder.
set -u
TINYLLM=${TINYLLM:-build/bin/tinyllm}
FIXTURES=${FIXTURES:-fixtures}
work=$(mktemp -d /tmp/tl-generate-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../lib/check.sh"

# field FILE.json EXPR: a value of a JSON report (python's json, printed as JSON)
field() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(eval(sys.argv[2])))' "$1" "$2"
}
# golden CHECKPOINT KEY: a list of llama.json, as JSON
golden() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["checkpoints"]
print(json.dumps(d[sys.argv[2]][sys.argv[3]] if len(sys.argv) > 3 else list(d)))' \
        "$FIXTURES/L7.9/llama.json" "$@"
}

# ---- greedy ids = the oracle's, on every checkpoint, cached and not ---------------------
checkpoints=$(golden | tr -d '[],"')
for ck in $checkpoints; do
    dir=$FIXTURES/L7.9/$ck
    prompt=$(golden "$ck" prompt_ids | tr -d ' []')
    n=$(golden "$ck" greedy_ids | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    for mode in cached uncached; do
        flag=; key=greedy_ids_cached
        [ $mode = uncached ] && flag=--no-cache key=greedy_ids
        out=$("$TINYLLM" generate "$dir" --ids "$prompt" -n "$n" --ignore-eos $flag \
              --json "$work/$ck.$mode.json" 2>"$work/err") || {
            bad "$ck $mode: generate failed" "$(cat "$work/err")"
            continue
        }
        want=$(golden "$ck" $key)
        got=$(field "$work/$ck.$mode.json" 'd["generated"]["ids"]')
        [ "$got" = "$want" ] && ok || bad "$ck $mode: greedy ids $got, the oracle's $want"
        # streamed to stdout as text: the oracle's ids decoded by `tinyllm detokenize`
        text=$("$TINYLLM" detokenize "$dir" --ids "$(tr -d ' []' <<<"$want")" \
               --skip-special 2>/dev/null)
        [ "$out" = "$text" ] && ok \
            || bad "$ck $mode: stdout '$out' is not the oracle's ids decoded, '$text'"
    done
done

# the report's fields (course/MS-L7/README.md)
r=$work/llama-gqa.cached.json
for f in 'd["prompt"]["ids"]' 'd["timings"]["load_s"]' 'd["timings"]["prefill_s"]' \
         'd["timings"]["decode_step_s"][22]' 'd["timings"]["total_s"]' \
         'd["timings"]["decode_tok_s"]' 'd["timings"]["prefill_tok_s"]' \
         'd["timings"]["time_to_first_token_s"]' 'd["memory"]["rss_after_load_bytes"]' \
         'd["memory"]["rss_after_prefill_bytes"]' 'd["memory"]["rss_after_decode_bytes"]' \
         'd["memory"]["peak_rss_bytes"]' 'd["machine"]["cpu"]' 'd["threads"]' \
         'd["generated"]["ended_by"]'; do
    field "$r" "$f" >/dev/null 2>&1 && ok || bad "--json lacks $f"
done
[ "$(field "$r" 'len(d["timings"]["decode_step_s"])')" = 23 ] && ok \
    || bad "--json: 24 new tokens are 23 decode steps (the first comes from the prefill)"

# f32 of a bf16 checkpoint widens exactly: the same ids as its own dtype
ck=llama-bf16-sharded
prompt=$(golden $ck prompt_ids | tr -d ' []')
"$TINYLLM" generate "$FIXTURES/L7.9/$ck" --ids "$prompt" -n 24 --ignore-eos --dtype f32 \
    --json "$work/f32.json" >/dev/null 2>&1
[ "$(field "$work/f32.json" 'd["generated"]["ids"]')" = "$(golden $ck greedy_ids_cached)" ] && ok \
    || bad "$ck --dtype f32: ids differ from the oracle's"
[ "$(field "$work/f32.json" 'd["dtype"]')" = '"f32"' ] \
    && [ "$(field "$work/$ck.cached.json" 'd["dtype"]')" = '"bf16"' ] \
    && ok || bad "$ck: its own dtype is bf16, --dtype f32 is f32"

# ---- a stop id ends the reply --------------------------------------------------------------
ck=llama-gqa
dir=$FIXTURES/L7.9/$ck
prompt=$(golden $ck prompt_ids | tr -d ' []')
stop=$(golden $ck greedy_ids | python3 -c 'import json,sys; print(json.load(sys.stdin)[3])')
mkdir -p "$work/stop"
for f in "$dir"/*; do ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$work/stop/"; done
rm "$work/stop/generation_config.json"
printf '{"eos_token_id": [999, %s]}\n' "$stop" > "$work/stop/generation_config.json"
"$TINYLLM" generate "$work/stop" --ids "$prompt" -n 24 --json "$work/stop.json" >/dev/null 2>&1
first4=$(golden $ck greedy_ids | python3 -c 'import json, sys
print(json.dumps(json.load(sys.stdin)[:4]))')
[ "$(field "$work/stop.json" 'd["generated"]["ids"]')" = "$first4" ] \
    && [ "$(field "$work/stop.json" 'd["generated"]["ended_by"]')" = '"stop_id"' ] && ok \
    || bad "generation_config.json's stop id $stop does not end the reply at it"

# ---- --prompt, --chat and chat, through the tokenizer ----------------------------------------
tk=$dir
text="hello world, the lighthouse keeper"
"$TINYLLM" generate "$tk" --prompt "$text" -n 8 --ignore-eos --json "$work/p.json" \
    >"$work/p.out" 2>/dev/null
ids=$("$TINYLLM" tokenize "$tk" --text "$text")
[ "$(field "$work/p.json" 'd["prompt"]["ids"]')" = "$ids" ] && ok \
    || bad "--prompt: ids $(field "$work/p.json" 'd["prompt"]["ids"]') are not tokenize's $ids"
"$TINYLLM" generate "$tk" --ids "$(tr -d ' []' <<<"$ids")" -n 8 --ignore-eos \
    --json "$work/i.json" >/dev/null 2>&1
[ "$(field "$work/p.json" 'd["generated"]["ids"]')" = \
  "$(field "$work/i.json" 'd["generated"]["ids"]')" ] \
    && ok || bad "--prompt and --ids of the same ids give different replies"
# the streamed text is the reply decoded (special tokens dropped)
want_text=$(field "$work/p.json" 'd["generated"]["text"]')
got_text=$(python3 -c 'import json, sys
print(json.dumps(open(sys.argv[1]).read().split("\n")[0]))' \
    "$work/p.out")
[ "$got_text" = "$want_text" ] && ok \
    || bad "--prompt: streamed $got_text, the decoded reply $want_text"

printf '[{"role": "user", "content": "%s"}]' "$text" > "$work/m.json"
"$TINYLLM" chat-template "$tk" --messages "$work/m.json" --add-generation-prompt \
    >"$work/rendered.txt" 2>/dev/null
"$TINYLLM" generate "$tk" --prompt "$text" --chat -n 8 --json "$work/c.json" >/dev/null 2>&1
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["prompt"]["rendered"]
sys.exit(0 if r == open(sys.argv[2]).read() else 1)' "$work/c.json" "$work/rendered.txt" \
    && ok || bad "--chat: the rendered prompt is not chat-template's"

out=$(printf 'hello\nand then\n/exit\n' | "$TINYLLM" chat "$tk" -n 4 2>&1 >/dev/null)
turns=$(grep -c 'new prompt tokens' <<<"$out")
first=$(grep -o '^\[[0-9]* new' <<<"$out" | head -1 | tr -dc 0-9)
second=$(grep -o '^\[[0-9]* new' <<<"$out" | sed -n 2p | tr -dc 0-9)
[ "$turns" = 2 ] && [ -n "$second" ] && [ "$second" -lt "$first" ] && ok \
    || bad "chat: two turns, the second running only its new tokens" "$out"

# ---- refusals ---------------------------------------------------------------------------------
check "not a folder" 1 "$work/nothing does not exist" -- \
    "$TINYLLM" generate "$work/nothing" --ids 1,2
check "a file" 1 "is a file, not a folder" -- "$TINYLLM" generate "$work/m.json" --ids 1,2
mkdir -p "$work/empty" && touch "$work/empty/notes.txt"
check "no config.json" 1 "not a checkpoint folder" "notes.txt" -- \
    "$TINYLLM" generate "$work/empty" --ids 1,2
mkdir -p "$work/noweights" && cp "$dir/config.json" "$work/noweights/"
check "no weights" 1 "no weights" "tinyllm pull" -- "$TINYLLM" generate "$work/noweights" --ids 1,2
# weights stored as FP8 or as a quantization's integers: refused before the load
for stored in F8_E4M3 I32; do
    mkdir -p "$work/$stored" && cp "$dir/config.json" "$work/$stored/"
    python3 -c 'import json, struct, sys
shape = [2, 2] if sys.argv[2] == "I32" else [4, 4]   # 16 bytes either way
head = json.dumps({"model.embed_tokens.weight": {"dtype": sys.argv[2], "shape": shape,
                   "data_offsets": [0, 16]}}).encode()
head += b" " * (-len(head) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(head)) + head + bytes(16))' \
        "$work/$stored/model.safetensors" "$stored"
done
check "weights stored as FP8" 1 "F8_E4M3 in model.safetensors" "BF16 release" -- \
    "$TINYLLM" generate "$work/F8_E4M3" --ids 1,2
check "weights stored as integers" 1 "I32 in model.safetensors" "unquantized" -- \
    "$TINYLLM" chat "$work/I32"
# another model's config, far larger than the weights: said so, not "out of memory" alone
mkdir -p "$work/huge" && cp "$FIXTURES/L7.9/llama-gqa/"* "$work/huge/"
sed -i -e 's/"hidden_size": 32/"hidden_size": 262144/' \
    -e 's/"num_hidden_layers": 2/"num_hidden_layers": 200/' "$work/huge/config.json"
check "another model's config" 1 "huge/config.json describes a model of" "fetch both again" \
    -- "$TINYLLM" generate "$work/huge" --ids 1,2
check "another model's config, chat" 1 "huge/config.json describes a model of" -- \
    "$TINYLLM" chat "$work/huge"
check "dtype f16" 2 "f32 or bf16" -- "$TINYLLM" generate "$dir" --ids 1,2 --dtype f16
check "dtype fp8" 2 "--dtype fp8" -- "$TINYLLM" generate "$dir" --ids 1,2 --dtype fp8
long=$(python3 -c 'print(",".join(["5"] * 300))')
check "prompt longer than the context" 2 "300 tokens" "context is 256" -- \
    "$TINYLLM" generate "$dir" --ids "$long"
check "reply shortened to the context" 0 "generating at most 6 tokens" -- \
    "$TINYLLM" generate "$dir" --ids "$(python3 -c 'print(",".join(["5"] * 250))')" -n 50 --quiet
check "id out of the vocabulary" 2 "outside the vocabulary" -- \
    "$TINYLLM" generate "$dir" --ids 1,512
for ids in 1,x -1,5 5,,6 5x ""; do
    check "bad ids '$ids'" 2 "not a token id" -- "$TINYLLM" generate "$dir" --ids "$ids"
done
check "-n past its limit" 2 "from 1 to 16777216" -- \
    "$TINYLLM" generate "$dir" --ids 1 -n 99999999999
# --json that cannot be written: said before the load (no timings), not after the run
for bad_json in "$work" "$work/none/r.json"; do
    check "--json $bad_json" 1 "--json $bad_json" -- "$TINYLLM" generate "$dir" --ids 1,2 -n 2 \
        --json "$bad_json"
    out=$("$TINYLLM" generate "$dir" --ids 1,2 -n 2 --json "$bad_json" 2>&1)
    if grep -q "first token" <<<"$out"; then bad "--json $bad_json: refused after the run" "$out"
    else ok; fi
done

# --json writes through a name of its own: a user's report.json.tmp, or a link left under
# that name, is neither written through nor removed; a link, a device or a file of the
# checkpoint under the final name is refused before the run (the rename would replace it)
mkdir -p "$work/json" && echo precious >"$work/json/victim" && echo mine >"$work/json/r.json.tmp"
ln -s "$work/json/victim" "$work/json/r2.json.tmp"
ln -s "$work/json/victim" "$work/json/r3.json"
for r in r r2; do
    check "--json beside a $r.json.tmp" 0 "first token" -- "$TINYLLM" generate "$dir" --ids 1,2 \
        -n 2 --quiet --json "$work/json/$r.json"
done
check "--json onto a link" 1 "--json $work/json/r3.json is a symbolic link" -- \
    "$TINYLLM" generate "$dir" --ids 1,2 -n 2 --quiet --json "$work/json/r3.json"
cp -r "$dir" "$work/own"   # a copy: a regression must not overwrite the fixture
check "--json onto the checkpoint's config.json" 1 "is config.json of the checkpoint" -- \
    "$TINYLLM" generate "$work/own" --ids 1,2 -n 2 --quiet --json "$work/own/config.json"
cmp -s "$work/own/config.json" "$dir/config.json" && ok || bad "--json overwrote config.json"
check "--json onto a fifo" 1 "is not a regular file" -- sh -c \
    'mkfifo "$2/json/pipe" && "$0" generate "$1" --ids 1,2 -n 2 --json "$2/json/pipe"; \
     s=$?; rm -f "$2/json/pipe"; exit $s' "$TINYLLM" "$dir" "$work"
[ "$(cat "$work/json/victim")" = precious ] && [ "$(cat "$work/json/r.json.tmp")" = mine ] \
    && [ -L "$work/json/r2.json.tmp" ] && [ -L "$work/json/r3.json" ] \
    && [ -z "$(ls "$work/json" | grep -v -x -e victim -e r.json -e r.json.tmp -e r2.json \
               -e r2.json.tmp -e r3.json)" ] && ok \
    || bad "--json: a file or link beside the report was touched" "$(ls -l "$work/json")"
# output that cannot be written (a full disk) fails the run
check "stdout on a full disk" 1 "cannot write the output" -- \
    sh -c '"$0" generate "$1" --ids 1,2 -n 2 >/dev/full' "$TINYLLM" "$dir"

# variant NAME FILE: llama-gqa's files linked into $work/NAME but FILE, left to write
variant() {
    mkdir -p "$work/$1"
    for f in "$dir"/*; do ln -sf "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$work/$1/"; done
    rm "$work/$1/$2"
    echo "$work/$1"
}
# a key given twice: Python's json.load (HF) takes the last, cJSON the first
v=$(variant dupcfg config.json)
sed 's/^}$/, "rms_norm_eps": 0.5}/' "$dir/config.json" >"$v/config.json"
check "config.json with a key twice" 1 "$v/config.json gives the key \"rms_norm_eps\" twice" \
    -- "$TINYLLM" generate "$v" --ids 1,2
v=$(variant dupgen generation_config.json)
echo '{"eos_token_id": 2, "eos_token_id": 5}' >"$v/generation_config.json"
check "generation_config.json with a key twice" 1 \
    "$v/generation_config.json gives the key \"eos_token_id\" twice" \
    -- "$TINYLLM" generate "$v" --ids 1,2
v=$(variant duptok tokenizer_config.json)
sed 's/^}$/, "chat_template": "{{ 1 }}"}/' "$dir/tokenizer_config.json" >"$v/tokenizer_config.json"
check "tokenizer_config.json with a key twice" 1 \
    "$v/tokenizer_config.json gives the key \"chat_template\" twice" \
    -- "$TINYLLM" generate "$v" --prompt hi --chat
# tokenizer.json: the tokenizers library keeps the last top-level key, cJSON the first
v=$(variant duptokenizer tokenizer.json)
sed 's/^}$/, "decoder": null}/' "$dir/tokenizer.json" >"$v/tokenizer.json"
check "tokenizer.json with a key twice" 1 \
    "$v/tokenizer.json: the key \"decoder\" is given twice" "remove one of the two" \
    -- "$TINYLLM" generate "$v" --prompt hi
# generation_config.json's eos_token_id that is not a token id, or a list of them (HF fails)
v=$(variant eosabc generation_config.json)
echo '{"eos_token_id": "abc"}' >"$v/generation_config.json"
check "eos_token_id \"abc\"" 1 "$v/generation_config.json: eos_token_id is \"abc\"" \
    -- "$TINYLLM" generate "$v" --ids 1,2
v=$(variant eoslist generation_config.json)
echo '{"eos_token_id": [2, 2.5]}' >"$v/generation_config.json"
check "eos_token_id [2, 2.5]" 1 "$v/generation_config.json: eos_token_id is [2,2.5]" \
    -- "$TINYLLM" generate "$v" --ids 1,2
# ... said with its value and what to do when the tokenizer reads it first (--prompt)
v=$(variant eosneg generation_config.json)
echo '{"eos_token_id": [2, -1]}' >"$v/generation_config.json"
check "eos_token_id [2, -1], --prompt" 1 "$v/generation_config.json: eos_token_id is [2,-1]" \
    "fix it, or remove the key" -- "$TINYLLM" generate "$v" --prompt hi
# chat holds the whole context: one that cannot be had (a damaged max_position_embeddings)
# is said with its size, which generator_close once cleared to "0 token ids" first
v=$(variant hugectx config.json)
sed 's/"max_position_embeddings": 256/"max_position_embeddings": 1000000000000000/' \
    "$dir/config.json" >"$v/config.json"
check "chat with a context of 10^15 positions" 1 \
    "out of memory for 1000000000000000 token ids" "max_position_embeddings is 1000000000000000" \
    -- "$TINYLLM" chat "$v" </dev/null
# more stop ids than tinyllm keeps: refused, not cut to the first ones (the reply would run
# past the 17th, where HF stops); repeated ids count once
v=$(variant eosmany generation_config.json)
python3 -c 'import json, sys
json.dump({"eos_token_id": list(range(100, 117))}, open(sys.argv[1], "w"))' \
    "$v/generation_config.json"
check "eos_token_id with 17 stop ids" 1 "$v/generation_config.json: eos_token_id lists more" \
    -- "$TINYLLM" generate "$v" --ids 1,2
python3 -c 'import json, sys
json.dump({"eos_token_id": list(range(100, 116)) * 2}, open(sys.argv[1], "w"))' \
    "$v/generation_config.json"
check "eos_token_id with 16 stop ids, each twice" 0 "first token" \
    -- "$TINYLLM" generate "$v" --ids 1,2 -n 2
# generation_config.json that is JSON but not an object (HF's GenerationConfig fails): not
# taken for one without stop ids
v=$(variant gcarray generation_config.json)
echo '[2]' >"$v/generation_config.json"
check "generation_config.json an array" 1 \
    "$v/generation_config.json is not a JSON object" -- "$TINYLLM" generate "$v" --ids 1,2
# generation_config.json as anything but a file: said, never waited on (a FIFO) or taken
# for missing; and one of any size is read whole
v=$(variant gcfifo generation_config.json)
mkfifo "$v/generation_config.json"
check "generation_config.json a FIFO" 1 "generation_config.json: is a FIFO" -- \
    timeout 20 "$TINYLLM" generate "$v" --ids 1,2
v=$(variant gcdir generation_config.json)
mkdir "$v/generation_config.json"
check "generation_config.json a folder" 1 "generation_config.json: is a folder" -- \
    "$TINYLLM" generate "$v" --ids 1,2
v=$(variant tokfifo tokenizer.json)
mkfifo "$v/tokenizer.json"
check "tokenizer.json a FIFO" 1 "tokenizer.json: is a FIFO" -- \
    timeout 20 "$TINYLLM" generate "$v" --prompt hi
v=$(variant gcbig generation_config.json)
python3 -c 'import json, sys
json.dump({"eos_token_id": 3, "notes": "x" * 100000}, open(sys.argv[1], "w"))' \
    "$v/generation_config.json"
check "generation_config.json of 100 KB" 0 "first token" -- "$TINYLLM" generate "$v" --ids 1,2 -n 2
v=$(variant gcempty generation_config.json)
echo '{"eos_token_id": []}' >"$v/generation_config.json"
check "eos_token_id []: config.json's" 0 "first token" -- "$TINYLLM" generate "$v" --prompt hi -n 2
# a prompt token past the vocabulary: the checkpoint's fault (1), not --ids's
v=$(variant bigid tokenizer.json)
python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"].append({"id": 600, "content": "<big>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
json.dump(t, open(sys.argv[2], "w"))' "$dir/tokenizer.json" "$v/tokenizer.json"
check "a prompt token past the vocabulary" 1 "the prompt's token '<big>'" "has id 600" \
    "vocabulary of 512" "$v/tokenizer.json" -- "$TINYLLM" generate "$v" --prompt "<big>" -n 2
# a chat template that does not parse: named as tokenizer_config.json's, where it is;
# chat refuses it at startup (as it refuses a missing one), not at the first turn
v=$(variant badtpl tokenizer_config.json)
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["chat_template"] = "{% for m in messages %}{{ m.content }"
json.dump(d, open(sys.argv[2], "w"))' "$dir/tokenizer_config.json" "$v/tokenizer_config.json"
check "--chat: a broken template" 1 "the chat template of $v/tokenizer_config.json" \
    -- "$TINYLLM" generate "$v" --prompt hi --chat
check "chat-template: a broken template" 1 "the chat template of $v/tokenizer_config.json" \
    -- "$TINYLLM" chat-template "$v" --messages "$work/m.json"
check "chat: a broken template at startup" 1 "the chat template of $v/tokenizer_config.json" \
    -- sh -c 'printf "hi\n" | "$0" chat "$1" -n 2' "$TINYLLM" "$v"
# a template that renders nothing: the turn is said and dropped, the chat goes on, and
# its exit status says a turn failed (a script sees it); a working chat ends with 0
v=$(variant emptytpl tokenizer_config.json)
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["chat_template"] = "{% if false %}x{% endif %}"
json.dump(d, open(sys.argv[2], "w"))' "$dir/tokenizer_config.json" "$v/tokenizer_config.json"
check "chat: a template that renders nothing" 1 "rendered no token for this conversation" \
    "check the template" -- sh -c 'printf "hi\nagain\n" | "$0" chat "$1" -n 2' "$TINYLLM" "$v"
check "chat: every turn ran" 0 "" -- sh -c 'printf "hi\n" | "$0" chat "$1" -n 2' "$TINYLLM" "$dir"
check "no prompt" 2 "--prompt TEXT or --ids" -- "$TINYLLM" generate "$dir"
# the checkpoint without its tokenizer files
mkdir -p "$work/notok"
for f in "$dir"/config.json "$dir"/generation_config.json "$dir"/*.safetensors; do
    ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$work/notok/"
done
check "--prompt without tokenizer" 1 "tokenizer" -- "$TINYLLM" generate "$work/notok" --prompt hi
check "chat without a tokenizer" 1 "tokenizer" -- "$TINYLLM" chat "$work/notok"
check "-n 0" 2 "-n takes" -- "$TINYLLM" generate "$dir" --ids 1 -n 0

# ---- progress on the load: on a terminal (script(1) gives one), never in a pipe --------------
out=$(script -qec "'$TINYLLM' generate '$dir' --ids 1,2,3 -n 2 --quiet" /dev/null 2>&1)
grep -q "loading $dir: 100% of" <<<"$out" && ok || bad "no load progress on a terminal" "$out"
out=$("$TINYLLM" generate "$dir" --ids 1,2,3 -n 2 --quiet 2>&1)
grep -q "loading" <<<"$out" && bad "load progress written into a pipe" "$out" || ok

# ---- Ctrl-C: exit 130, the timings so far -----------------------------------------------------
# llama-dynamic rescales its rope past its context, so a long run is allowed; the
# run is stopped once it has streamed some ids (a fifo: no sleep, no timing).
mkfifo "$work/fifo"
"$TINYLLM" generate "$FIXTURES/L7.9/llama-dynamic" --ids 5,6,7 -n 1000000 --ignore-eos \
    --json "$work/int.json" >"$work/fifo" 2>"$work/int.err" &
pid=$!
exec 3<"$work/fifo"
head -c 64 <&3 >/dev/null
kill -INT $pid
cat <&3 >/dev/null
exec 3<&-
wait $pid
status=$?
[ $status = 130 ] && grep -q "interrupted" "$work/int.err" && grep -q "decode" "$work/int.err" \
    && [ "$(field "$work/int.json" 'd["generated"]["ended_by"]')" = '"interrupted"' ] && ok \
    || bad "Ctrl-C: exit $status (130 expected), the partial timings" "$(cat "$work/int.err")"

# ---- --help for every verb --------------------------------------------------------------------
for verb in $("$TINYLLM" --help | awk '/^verbs:/{on=1; next} on && !NF {exit} on {print $1}'); do
    check "$verb --help" 0 "usage: tinyllm $verb" -- "$TINYLLM" "$verb" --help
done

summary "tinyllm generate/chat"
