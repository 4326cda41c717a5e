#!/usr/bin/env bash
# Proves, for every course/*/lesson.json, what grading relies on:
#   1. the stub fails every course test with "not implemented";
#   2. the reference passes every course test;
#   3. `ol mutants verify` passes (mutants apply, compile, are killed by
#      their Caught-by tests; wheats pass);
#   4. the model-answer student tests are graded PASS at the lesson's rung.
#   tests/ol/lessons.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY
T=$(mktemp -d "${TMPDIR:-/tmp}/ol-lessons.XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0 checks=0
ok()   { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1"; printf '%s\n' "$out" | sed 's/^/     | /' | tail -40; }
run()  { out=$("$@" 2>&1); rc=$?; }

# field ID KEY: a lesson.json value (lists joined by spaces)
field() {
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1])).get(sys.argv[2], "")
print(" ".join(v) if isinstance(v, list) else v)' "$ROOT/course/$1/lesson.json" "$2"
}

for json in "$ROOT"/course/*/lesson.json; do
  id=$(basename "$(dirname "$json")")
  W=$T/$id; mkdir -p "$W"; cd "$W" || exit 2
  echo "-- $id"
  run "$OL" start "$id"
  [ "$rc" = 0 ] || { fail "$id: ol start"; continue; }

  run "$OL" tests "$id" --ref-deps
  # every test fails, and each failure's message says "not implemented"
  passes=$(grep -c '^  pass ' <<<"$out")
  silent=$(awk '/^  FAIL /{getline m; if (m !~ /not implemented/) print}' <<<"$out" | wc -l)
  if [ "$rc" = 1 ] && [ "$passes" = 0 ] && [ "$silent" = 0 ]; then
    ok "$id: the stub fails every course test with \"not implemented\""
  else
    fail "$id: the stub fails every course test with \"not implemented\" ($passes pass, $silent fail otherwise)"
  fi

  for src in $(field "$id" sources); do
    mkdir -p "c/$(dirname "$src")"; cp "$ROOT/reference/$src" "c/$src"
  done
  run "$OL" tests "$id" --ref-deps
  [ "$rc" = 0 ] && ok "$id: the reference passes every course test" \
                || fail "$id: the reference passes every course test"

  run "$OL" mutants verify "$id"
  [ "$rc" = 0 ] && ok "$id: ol mutants verify" || fail "$id: ol mutants verify"

  model=$(field "$id" model_tests) slug=$(field "$id" student_tests)
  if [ -z "$model" ] || [ ! -d "$ROOT/$model" ]; then
    fail "$id: lesson.json names no model_tests folder"
    continue
  fi
  # the test files and any header of their own folder (course/FORMAT.md allows them)
  rm -rf "c/$slug"; mkdir -p "c/$slug"
  find "$ROOT/$model" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) -exec cp {} "c/$slug/" \;
  run "$OL" check "$id" --ref-deps
  [ "$rc" = 0 ] && ok "$id: the model-answer tests reach rung $(field "$id" rung)" \
                || fail "$id: the model-answer tests reach rung $(field "$id" rung)"
done
echo "test-lessons: $((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
