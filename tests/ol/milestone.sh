#!/usr/bin/env bash
# `ol milestone MS-L7` end to end, in scratch workspaces:
# - --smoke on a fresh workspace (every lesson the reference) passes every check
#   (info, logits, generate with and without the cache on all 11 checkpoints, pull
#   and load) and writes Gradescope's results.json with one test per check;
# - a workspace whose L7.1 is the stub (`ol start L7.1`) fails, with FAIL lines and
#   exit 1, and passes again with --ref-deps;
# - L7.1's pitfall s02 in the student's rmsnorm.c fails the logits checks, with the
#   deviation as a multiple of the tolerance;
# - without --smoke, on a tiny stand-in cached under SmolLM2's name: generate and pull
#   pass against the reference's tinyllm, info fails on the parameter count;
# - a non-static helper in two lessons: the link fails, with the fix (make it static);
# - without --smoke and without the model in the cache: exit 2, saying how to pull it;
# - usage errors: exit 2.
#   tests/ol/milestone.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_VERBOSE TINYLLM_CACHE
mkdir -p "$ROOT/build"
T=$(mktemp -d "$ROOT/build/ol-milestone.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/ol/lib.sh"

mkdir -p "$T/ws" && cd "$T/ws"
run "$OL" milestone MS-L7 --smoke --gradescope "$T/gs.json"
expect "--smoke passes with the reference" 0 "PASS: 47 of 47 checks passed" \
  "ok   generate deepseek-v3 (no cache)" "ok   pull course/tiny-llama-gqa from a fake Hub"
python3 - "$T/gs.json" <<'PY' && ok "--gradescope: one test per check, score 47" \
  || fail "--gradescope's results.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["tests"]) == 47 and d["score"] == 47, d
assert all(t["status"] == "passed" and t["max_score"] == 1 for t in d["tests"])
PY

# the full mode on a stand-in: a tiny checkpoint in the cache under SmolLM2's name runs every
# check against the reference's tinyllm; its parameter count and vocabulary are not SmolLM2's
mkdir -p "$T/cache/HuggingFaceTB--SmolLM2-135M-Instruct"
ln -s "$ROOT/fixtures/L7.9/llama-gqa" "$T/cache/HuggingFaceTB--SmolLM2-135M-Instruct/main"
run env TINYLLM_CACHE="$T/cache" "$OL" milestone MS-L7
expect "the full mode: the reference's reply, the pull; a wrong model's count fails" 1 \
  "FAIL info HuggingFaceTB/SmolLM2-135M-Instruct     51360 parameters; Hugging Face counts" \
  "ok   generate --chat (32 tokens)                  32 tokens, the reference's" \
  "ok   pull HuggingFaceTB/SmolLM2-135M-Instruct from a fake Hub" "FAIL: 2 of 5 checks"

run "$OL" start L7.1
run "$OL" milestone MS-L7 --smoke
expect "the stub of L7.1 fails" 1 "your code of L7.1" "FAIL logits llama-gqa" "FAIL: "
run "$OL" milestone MS-L7 --smoke --ref-deps
expect "--ref-deps builds with the reference" 0 "your code of no lesson" "PASS"

# L7.1's pitfall s02 (RMSNorm subtracting the mean) in the student's rmsnorm.c
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
sed -n '/^---$/,$p' "$ROOT"/course/L7.1/mutants/s02-*.mutant | tail -n +2 \
  | patch -s c/tinyllm/modern/rmsnorm.c >/dev/null 2>&1
if cmp -s c/tinyllm/modern/rmsnorm.c "$ROOT/reference/tinyllm/modern/rmsnorm.c"; then
  fail "the mutant s02 did not apply to rmsnorm.c"
else
  run "$OL" milestone MS-L7 --smoke
  expect "RMSNorm subtracting the mean fails the logits" 1 "FAIL logits llama-gqa" "x the tolerance"
fi

# a loop that never ends in rmsnorm_forward: two runs time out, the rest are not run
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
sed -i 's|^tl_tensor \*rmsnorm_forward(const RMSNorm \*n, tl_tensor \*x) {$|&\n    for (volatile int spin = 1; spin;) {}|' \
  c/tinyllm/modern/rmsnorm.c
started=$(date +%s)
run env OL_MILESTONE_TIMEOUT=2 "$OL" milestone MS-L7 --smoke
took=$(( $(date +%s) - started ))
expect "a hang: two runs time out, the rest are not run" 1 \
  "FAIL logits llama-gqa" "\`tinyllm logits\` timed out after 2.0 s" \
  "not run: 2 runs before it timed out" "\`ol tests\` on each lesson finds where"
[ "$took" -lt 60 ] && ok "a hang costs two timeouts, not one per check ($took s)" ||
  fail "a hang costs two timeouts, not one per check ($took s)"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c

# one non-static helper in two lessons: each links alone, tinyllm links both
run "$OL" start L7.2 --ref-deps
cp "$ROOT/reference/tinyllm/modern/mlp.c" c/tinyllm/modern/mlp.c
for f in rmsnorm mlp; do printf '\nint twice(int x) { return 2 * x; }\n' >> c/tinyllm/modern/$f.c; done
run "$OL" milestone MS-L7 --smoke
expect "a helper defined in two lessons: the clash, and the fix" 1 \
  "multiple definition of \`twice'" "\`twice\` is defined twice" "make it static" \
  "tinyllm does not link with your code"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
rm -rf c/tinyllm/modern/mlp.c c/tests/l7-2-*

run env TINYLLM_CACHE="$T/empty-cache" "$OL" milestone MS-L7
expect "no model in the cache: exit 2, how to pull it" 2 "is not in your tinyllm cache" \
  "ol tinyllm pull HuggingFaceTB/SmolLM2-135M-Instruct" "--smoke"
run "$OL" milestone MS-L9 --smoke
expect "an unknown milestone" 2 "no such milestone"
run "$OL" milestone
expect "no milestone id" 2 "one milestone id"
run "$OL" milestone --help
expect "--help" 0 "usage: ol milestone MS-L7"

summary "ol milestone"
