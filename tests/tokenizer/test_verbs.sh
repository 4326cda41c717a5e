#!/usr/bin/env bash
# `tinyllm tokenize | detokenize | chat-template` on the fixture tokenizers:
# the outputs the issue specifies (a JSON array on one line, the text, the
# rendered prompt), a round trip through the three verbs, the reason and exit 1
# on a bad file or input, exit 2 on usage errors, and no crash (no exit status
# of 128 or more) on garbage. Run by `make test-tokenizer`.
set -u
TINYLLM=${TINYLLM:-build/bin/tinyllm}
FIXTURES=${FIXTURES:-fixtures}
smol=$FIXTURES/tokenizer/tiny-bytelevel
sp=$FIXTURES/tokenizer/tiny-sentencepiece
work=$(mktemp -d /tmp/tl-tokenizer-verbs-XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../lib/check.sh"

check tokenize_prints_a_json_array_with_bos 0 "[1, " "]" -- "$TINYLLM" tokenize "$sp" --text "The cat"
check tokenize_no_special_leaves_bos_out 0 "[" -- "$TINYLLM" tokenize "$sp" --text "The cat" --no-special
if "$TINYLLM" tokenize "$sp" --text "The cat" --no-special | grep -q '^\[1, '; then
    echo "FAIL tokenize_no_special: starts with <s>"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
check tokenize_accepts_the_file_itself 0 "[" -- "$TINYLLM" tokenize "$smol/tokenizer.json" --text "x"
lines=$("$TINYLLM" tokenize "$smol" --text $'one\ntwo\nthree' | wc -l)
[ "$lines" -eq 1 ] && passed=$((passed + 1)) || { echo "FAIL tokenize_one_line: $lines lines"; failed=$((failed + 1)); }

# round trip: text -> ids -> text
printf 'Hello, world! caf\xc3\xa9 12\n' >"$work/text.txt"
ids=$("$TINYLLM" tokenize "$smol" --file "$work/text.txt" --no-special | tr -d '[] ')
"$TINYLLM" detokenize "$smol" --ids "$ids" >"$work/back.txt"
printf 'Hello, world! caf\xc3\xa9 12\n\n' >"$work/want.txt"   # detokenize adds one newline
if cmp -s "$work/back.txt" "$work/want.txt"; then passed=$((passed + 1)); else
    echo "FAIL round_trip: $(od -c "$work/back.txt" | head -3)"; failed=$((failed + 1)); fi
# clean_up_tokenization_spaces in tokenizer_config.json: " ," and " ." lose their space,
# as transformers' decode; without it the text is kept as it is
mkdir -p "$work/clean" && cp "$smol/tokenizer.json" "$work/clean/"
echo '{"clean_up_tokenization_spaces": true}' >"$work/clean/tokenizer_config.json"
ids=$("$TINYLLM" tokenize "$work/clean" --text "Hello , world ." --no-special | tr -d '[] ')
check detokenize_cleans_up_spaces_when_the_config_says 0 "Hello, world." -- \
    "$TINYLLM" detokenize "$work/clean" --ids "$ids"
check detokenize_keeps_spaces_otherwise 0 "Hello , world ." -- \
    "$TINYLLM" detokenize "$smol" --ids "$ids"
check detokenize_takes_a_json_array 0 "<s>" -- "$TINYLLM" detokenize "$sp" --ids "[1, 270]"
check detokenize_skip_special 0 "" -- "$TINYLLM" detokenize "$sp" --ids 1,2 --skip-special
check detokenize_notes_unknown_ids 0 "outside the vocabulary" -- "$TINYLLM" detokenize "$sp" --ids 1,99999

printf '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]' >"$work/m.json"
check chat_template_renders 0 "<s>[INST] Hi [/INST]Hello</s>" -- "$TINYLLM" chat-template "$sp" --messages "$work/m.json"
check chat_template_generation_prompt 0 "<|im_start|>assistant" -- \
    "$TINYLLM" chat-template "$smol" --messages "$work/m.json" --add-generation-prompt
"$TINYLLM" chat-template "$smol" --messages "$work/m.json" --add-generation-prompt >"$work/prompt.txt"
check chat_template_then_tokenize 0 "[1, " -- "$TINYLLM" tokenize "$smol" --file "$work/prompt.txt" --no-special
printf '[{"role": "assistant", "content": "first"}]' >"$work/bad.json"
check chat_template_raise_exception_exits_1 1 "Conversation roles must alternate" -- \
    "$TINYLLM" chat-template "$sp" --messages "$work/bad.json"
printf '{"role": "user"}' >"$work/notlist.json"
check chat_template_messages_must_be_a_list 1 "JSON list" -- \
    "$TINYLLM" chat-template "$sp" --messages "$work/notlist.json"
check chat_template_missing_messages_file 1 "cannot read" -- \
    "$TINYLLM" chat-template "$sp" --messages "$work/none.json"
for vars in '{bad' '[1]'; do
    check "chat_template_vars_${vars}_is_usage" 2 "--vars '$vars' is not a JSON object" -- \
        "$TINYLLM" chat-template "$sp" --messages "$work/m.json" --vars "$vars"
done
check chat_template_unknown_template_name 1 "'tool_use'" -- \
    "$TINYLLM" chat-template "$sp" --messages "$work/m.json" --template tool_use

# errors: exit 1 with the reason
printf 'ab\xff\n' >"$work/invalid.txt"
check tokenize_invalid_utf8_exits_1 1 "not valid UTF-8" "offset 2" -- \
    "$TINYLLM" tokenize "$smol" --file "$work/invalid.txt"
check tokenize_missing_path_exits_1 1 "does not exist" -- "$TINYLLM" tokenize "$work/nothing" --text x
mkdir -p "$work/unknown"
printf '{"pre_tokenizer": {"type": "UnicodeScripts"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}' \
    >"$work/unknown/tokenizer.json"
check tokenize_unknown_component_is_named 1 "UnicodeScripts" "$work/unknown/tokenizer.json" -- \
    "$TINYLLM" tokenize "$work/unknown" --text x
head -c 3000 "$smol/tokenizer.json" >"$work/cut.json"
check tokenize_cut_file_exits_1 1 "not valid JSON" -- "$TINYLLM" tokenize "$work/cut.json" --text x
mkdir -p "$work/noconfig"
cp "$smol/tokenizer.json" "$work/noconfig/"
check chat_template_without_a_template 1 "no chat_template" -- \
    "$TINYLLM" chat-template "$work/noconfig" --messages "$work/m.json"

# A key given twice: Hugging Face keeps the last (transformers' json.load for
# tokenizer_config.json; the tokenizers library for tokenizer.json, which
# refuses some repeats, e.g. an added token's field), cJSON the first. Every
# verb that loads the tokenizer refuses the file, naming it and the key's path.
# twin NAME: a copy of the byte-level fixture, to edit
twin() { mkdir -p "$work/$1" && cp "$smol"/* "$work/$1/" && echo "$work/$1"; }
check tokenize_a_copy_without_repeats_works 0 "[" -- "$TINYLLM" tokenize "$(twin same)" --text x
cfg=$(twin dupconfig)
sed -i 's/^}$/, "chat_template": "{{ 1 }}"}/' "$cfg/tokenizer_config.json"
vocab=$(twin dupvocab)
sed -i 's/^      "Ġthe": 269,$/&\n      "Ġthe": 411,/' "$vocab/tokenizer.json"
top=$(twin duptop)
sed -i 's/^}$/, "decoder": null}/' "$top/tokenizer.json"
for verb in tokenize detokenize chat-template; do
    case $verb in
    tokenize) args=(--text x) ;;
    detokenize) args=(--ids 1) ;;
    chat-template) args=(--messages "$work/m.json") ;;
    esac
    check "${verb}_refuses_a_config_key_twice" 1 "tinyllm $verb: " \
        "$cfg/tokenizer_config.json: the key \"chat_template\" is given twice" \
        "transformers' json.load keeps the last one" "remove one of the two" -- \
        "$TINYLLM" "$verb" "$cfg" "${args[@]}"
    check "${verb}_refuses_a_vocab_entry_twice" 1 \
        "$vocab/tokenizer.json: the key model.vocab.\"Ġthe\" is given twice" \
        "remove one of the two" -- "$TINYLLM" "$verb" "$vocab" "${args[@]}"
    check "${verb}_refuses_a_top_level_key_twice" 1 \
        "$top/tokenizer.json: the key \"decoder\" is given twice" -- \
        "$TINYLLM" "$verb" "$top" "${args[@]}"
done
eos=$(twin dupeos)
sed -i 's/^}$/, "eos_token": "<|endoftext|>"}/' "$eos/tokenizer_config.json"
check chat_template_refuses_eos_token_twice 1 "the key \"eos_token\" is given twice" -- \
    "$TINYLLM" chat-template "$eos" --messages "$work/m.json"
added=$(twin dupadded)
sed -i '0,/"content": "<|endoftext|>",/ s//& "content": "<|x|>",/' "$added/tokenizer.json"
check tokenize_refuses_an_added_token_field_twice 1 \
    "the key added_tokens[0].\"content\" is given twice" "or refuses the file" -- \
    "$TINYLLM" tokenize "$added/tokenizer.json" --text x
gen=$(twin dupgen)
sed -i 's/^}$/, "eos_token_id": 7}/' "$gen/generation_config.json"
check tokenize_refuses_a_stop_id_key_twice 1 \
    "$gen/generation_config.json: the key \"eos_token_id\" is given twice" -- \
    "$TINYLLM" tokenize "$gen" --text x
# cJSON cuts a string at \u0000, where HF keeps the rest
nul=$(twin nulconfig)
sed -i 's/^}$/, "x\\u0000a": 1, "x\\u0000b": 2}/' "$nul/tokenizer_config.json"
check tokenize_refuses_a_nul_in_a_string 1 \
    "$nul/tokenizer_config.json: a string holds \\u0000 (byte" "remove it" -- \
    "$TINYLLM" tokenize "$nul" --text x

# usage errors: exit 2; --help: exit 0
check tokenize_needs_text_or_file 2 "usage: tinyllm tokenize" -- "$TINYLLM" tokenize "$smol"
check tokenize_not_both 2 "usage" -- "$TINYLLM" tokenize "$smol" --text a --file b
check tokenize_unknown_option 2 "--nope" -- "$TINYLLM" tokenize "$smol" --text a --nope
check detokenize_bad_id 2 "'x'" -- "$TINYLLM" detokenize "$smol" --ids 1,x
check detokenize_negative_id 2 "not an id" -- "$TINYLLM" detokenize "$smol" --ids -3
check chat_template_needs_messages 2 "usage" -- "$TINYLLM" chat-template "$smol"
for verb in tokenize detokenize chat-template; do
    check "${verb}_help" 0 "usage: tinyllm $verb" -- "$TINYLLM" "$verb" --help
done

# garbage never crashes a verb
for k in 1 2 3 4 5 6 7 8; do
    head -c $((k * 1711)) /dev/urandom >"$work/garbage.json"
    "$TINYLLM" tokenize "$work/garbage.json" --text abc >/dev/null 2>&1
    status=$?
    if [ $status -ge 128 ]; then echo "FAIL garbage_$k: exit status $status"; failed=$((failed + 1));
    else passed=$((passed + 1)); fi
done

summary "tokenizer verbs"
