#!/usr/bin/env bash
# `tinyllm inspect`: listings of a file and of a sharded folder, the loader's
# message and exit 1 on a bad file, exit 2 on usage errors, and no crash
# (no exit status of 128 or more) on any bytes.
# Run by `make test-tinyllm`; TINYLLM is the binary, FIXTURES the fixtures folder.
set -u
TINYLLM=${TINYLLM:-build/bin/tinyllm}
FIXTURES=${FIXTURES:-fixtures}
work=$(mktemp -d /tmp/tl-inspect-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../lib/check.sh"

# A safetensors file from a header string and a number of zero data bytes.
make_st() {   # PATH HEADER DATA_BYTES
    local n=${#2}
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' \
        $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))" >"$1"
    printf '%s' "$2" >>"$1"
    head -c "$3" /dev/zero >>"$1"
}

golden=$FIXTURES/core/st_golden.safetensors
check lists_every_tensor_with_dtype_shape_bytes 0 \
    "8 tensors in 1 file, 26 values, 95 bytes of data" "format: pt" \
    "z.ids      I64      [4]                   32" \
    "a.count    I32      []                    4" \
    "empty      F32      [0, 3]                0" \
    "emb        BF16     [2, 4]                16" "unicode.é" \
    -- "$TINYLLM" inspect "$golden"
check lists_a_sharded_folder_file_by_file 0 \
    "3 tensors in 2 files" "total_size: 56" "model-00002-of-00002.safetensors:" \
    "lm_head.weight             BF16     [4, 2]" \
    -- "$TINYLLM" inspect "$FIXTURES/core/sharded"
check lists_an_index_file 0 "3 tensors in 2 files" \
    -- "$TINYLLM" inspect "$FIXTURES/core/sharded/model.safetensors.index.json"

head -c 100 "$golden" >"$work/truncated.safetensors"
check truncated_file_gives_the_loader_error 1 \
    "tinyllm inspect: safetensors: $work/truncated.safetensors: header length" "runs past the end" \
    -- "$TINYLLM" inspect "$work/truncated.safetensors"
make_st "$work/gap.safetensors" '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' 8
check bad_offsets_give_the_loader_error 1 "tensor \"a\": the first tensor's data begins at byte 4" \
    -- "$TINYLLM" inspect "$work/gap.safetensors"
check missing_path_fails 1 "does not exist" -- "$TINYLLM" inspect "$work/absent.safetensors"
mkdir "$work/empty"
check empty_folder_fails 1 "holds neither model.safetensors nor" -- "$TINYLLM" inspect "$work/empty"

# Paths that are no checkpoint: a clear reason and exit 1, at once. `timeout`
# turns a hang (a FIFO opened for reading waits for a writer) into a failure.
mkdir "$work/nothing" && touch "$work/nothing/README.md"
check folder_without_safetensors_fails 1 "nor any .safetensors file" "tinyllm pull" \
    -- timeout 10 "$TINYLLM" inspect "$work/nothing"
ln -s loop-b "$work/loop-a" && ln -s loop-a "$work/loop-b"
check symlink_loop_fails 1 "$work/loop-a cannot be opened: a loop of symlinks" \
    -- timeout 10 "$TINYLLM" inspect "$work/loop-a"
mkdir "$work/looped" && ln -s ../looped "$work/looped/self"
check folder_reached_through_a_cycle_fails_cleanly 1 "holds neither model.safetensors" \
    -- timeout 10 "$TINYLLM" inspect "$work/looped/self/self/self"
check dev_zero_is_refused 1 "/dev/zero: is a character device, not a regular file" \
    -- timeout 10 "$TINYLLM" inspect /dev/zero
mkfifo "$work/pipe.safetensors"
check fifo_is_refused_without_hanging 1 "pipe.safetensors: is a FIFO (named pipe), not a regular file" \
    -- timeout 10 "$TINYLLM" inspect "$work/pipe.safetensors"
mkdir "$work/fifo-index" && mkfifo "$work/fifo-index/model.safetensors.index.json"
check fifo_index_is_refused_without_hanging 1 "is a FIFO (named pipe)" \
    -- timeout 10 "$TINYLLM" inspect "$work/fifo-index"
: >"$work/empty.safetensors"
check empty_file_fails 1 "file is 0 bytes" "an empty file" \
    -- timeout 10 "$TINYLLM" inspect "$work/empty.safetensors"
mkdir "$work/escape" && cp "$FIXTURES/core/sharded/"* "$work/escape/"
mv "$work/escape/model-00002-of-00002.safetensors" "$work/outside.safetensors"
ln -s ../outside.safetensors "$work/escape/model-00002-of-00002.safetensors"
check shard_linking_out_of_the_folder_is_refused 1 "is a symlink to" "outside the model folder" \
    -- timeout 10 "$TINYLLM" inspect "$work/escape"

make_st "$work/esc.safetensors" '{"evil\u001b[31m":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}' 4
check control_bytes_in_names_are_escaped 0 'evil\x1b[31m' -- "$TINYLLM" inspect "$work/esc.safetensors"
if "$TINYLLM" inspect "$work/esc.safetensors" | grep -q $'\x1b'; then
    failed=$((failed + 1)); echo "FAIL control_bytes_in_names_are_escaped: a raw ESC reached the terminal"
fi

check no_verb_is_a_usage_error 2 "usage: tinyllm VERB" -- "$TINYLLM"
check unknown_verb_is_a_usage_error 2 "unknown verb 'frobnicate'" -- "$TINYLLM" frobnicate
check inspect_without_path_is_a_usage_error 2 "usage: tinyllm inspect PATH" -- "$TINYLLM" inspect
check inspect_with_two_paths_is_a_usage_error 2 "usage: tinyllm inspect PATH" \
    -- "$TINYLLM" inspect "$golden" "$golden"
check help_lists_the_verbs 0 "inspect" -- "$TINYLLM" --help

# Arbitrary bytes: seeded, reproducible; every file is refused or listed, never a crash.
crashes=0
for seed in $(seq 1 60); do
    f="$work/noise-$seed.safetensors"
    if [ $((seed % 2)) = 0 ]; then
        head -c $((seed * 37)) /dev/zero | tr '\0' "\\$(printf '%03o' $((seed * 7 % 256)))" >"$f"
    else   # the golden file with a few bytes overwritten
        cp "$golden" "$f"
        for k in 1 2 3; do
            printf "\\x$(printf '%02x' $(((seed * 131 + k * 17) % 256)))" |
                dd of="$f" bs=1 seek=$(((seed * 97 + k * 53) % 600)) conv=notrunc status=none
        done
    fi
    "$TINYLLM" inspect "$f" >/dev/null 2>&1
    status=$?
    if [ $status -ge 2 ]; then crashes=$((crashes + 1)); echo "FAIL noise $seed: exit status $status"; fi
done
if [ $crashes = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

summary "tinyllm inspect"
