#!/usr/bin/env bash
# Proves, for every lesson of course/ (or the ones named), what grading
# relies on:
#   0. lesson.json is valid (`ol lesson show`, the validator every ol
#      command uses), and the oracle remakes the committed fixtures
#      (`ol fixtures --check`, a few seconds);
#   1. the stub fails every course test with "not implemented";
#   2. the reference passes every course test;
#   3. `ol mutants verify` passes (mutants apply, compile, are killed by
#      their Caught-by tests; wheats pass);
#   4. the model-answer student tests are graded PASS at the lesson's rung;
#   5. the reference runs clean, under the course tests and the model
#      answers, with AddressSanitizer and UBSan and under valgrind
#      (`ol tests --asan`, `--valgrind`: no report that reaches its code).
# Two lessons run at a time, each in its own scratch workspace; each prints
# one block when it ends, in course order. Drafts are proved like the rest.
#   tests/ol/lessons.sh OL_BINARY [LESSON...]
set -u
OL=$(realpath "$1"); shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY
PARALLEL=${OL_LESSONS_PARALLEL:-2}
T=$(mktemp -d "${TMPDIR:-/tmp}/ol-lessons.XXXXXX")
trap 'rm -rf "$T"' EXIT

if [ $# -gt 0 ]; then ids=("$@"); else mapfile -t ids < <("$OL" lesson list); fi
if [ ${#ids[@]} -eq 0 ]; then echo "FAIL no lesson to prove (course/*/lesson.json)"; exit 1; fi

# prove ID: one lesson's block, into $T/ID.log
prove() {
  local id=$1 W=$T/ws-$1 out rc started
  started=$(date +%s)
  ok()   { echo "ok   $id: $1"; }
  fail() { echo "FAIL $id: $1"; printf '%s\n' "$out" | sed 's/^/     | /' | tail -40; }
  run()  { out=$("$@" 2>&1); rc=$?; }
  field() { "$OL" lesson show "$id" --field "$1"; }
  mkdir -p "$W" && cd "$W" || { echo "FAIL $id: no scratch workspace"; return; }
  run "$OL" lesson show "$id"
  if [ "$rc" != 0 ]; then fail "lesson.json is valid (ol lesson show)"; return; fi
  ok "lesson.json is valid (ol lesson show)"
  if [ -n "$(field oracle 2>/dev/null)" ]; then
    run "$OL" fixtures "$id" --check
    [ "$rc" = 0 ] && ok "the oracle remakes the committed fixtures (ol fixtures --check)" \
                  || fail "the oracle remakes the committed fixtures (ol fixtures --check)"
  fi
  run "$OL" start "$id" --draft
  [ "$rc" = 0 ] || { fail "ol start"; return; }

  run "$OL" tests "$id" --ref-deps
  # every test fails, and each failure's message says "not implemented"
  local passes silent
  passes=$(grep -c '^  pass ' <<<"$out")
  silent=$(awk '/^  FAIL /{getline m; if (m !~ /not implemented/) print}' <<<"$out" | wc -l)
  if [ "$rc" = 1 ] && [ "$passes" = 0 ] && [ "$silent" = 0 ]; then
    ok "the stub fails every course test with \"not implemented\""
  else
    fail "the stub fails every course test with \"not implemented\" ($passes pass, $silent fail otherwise)"
  fi

  # ol diff shows the reference beside the student's code: every line at most 100 columns
  local src long=
  for src in $(field sources); do
    long="$long$(expand "$ROOT/reference/$src" | awk -v f="reference/$src" 'length > 100 {print f ":" NR}')"
    long="$long$(expand "$ROOT/stubs/$src" | awk -v f="stubs/$src" 'length > 100 {print f ":" NR}')"
  done
  out="lines over 100 columns: $long"
  [ -z "$long" ] && ok "the reference and the stub keep lines to 100 columns" \
                 || fail "the reference and the stub keep lines to 100 columns"
  for src in $(field sources); do
    mkdir -p "c/$(dirname "$src")"; cp "$ROOT/reference/$src" "c/$src"
  done
  run "$OL" tests "$id" --ref-deps
  [ "$rc" = 0 ] && ok "the reference passes every course test" \
                || fail "the reference passes every course test"

  run "$OL" mutants verify "$id"
  [ "$rc" = 0 ] && ok "ol mutants verify" || fail "ol mutants verify"

  local model slug rung
  model=$(field model_tests) slug=$(field student_tests) rung=$(field rung)
  if [ -z "$model" ]; then
    out="lesson.json has no \"model_tests\""
    fail "the model-answer tests reach rung $rung"
  else
    # the test files and any header of their own folder (course/FORMAT.md allows them)
    rm -rf "c/$slug"; mkdir -p "c/$slug"
    find "$ROOT/$model" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) -exec cp {} "c/$slug/" \;
    run "$OL" check "$id" --ref-deps
    [ "$rc" = 0 ] && ok "the model-answer tests reach rung $rung" \
                  || fail "the model-answer tests reach rung $rung"
  fi

  # the memory claims: two tools at a time (the downloader's tests mostly wait)
  local tool which
  for which in "" --mine; do
    [ -n "$which" ] && [ -z "$model" ] && continue
    for tool in --asan --valgrind; do
      "$OL" tests "$id" --ref-deps $which $tool > "$W/mem$which$tool.log" 2>&1 &
    done
    wait
    for tool in --asan --valgrind; do
      out=$(cat "$W/mem$which$tool.log")
      local what="the reference under ${tool#--} (the course tests)"
      [ -n "$which" ] && what="the reference under ${tool#--} (the model answers)"
      if grep -q 'Failures: 0, Errors: 0' <<<"$out" && ! grep -q 'ol: error' <<<"$out"; then ok "$what"
      else fail "$what"; fi
    done
  done
  echo "     ($id took $(($(date +%s) - started)) s)"
}

# at most $PARALLEL at once, the last lesson first (the course grows: L7.9's downloader
# tests take as long as the rest together); blocks are printed in course order as they end
running=0
for ((i = ${#ids[@]} - 1; i >= 0; i--)); do
  id=${ids[$i]}
  if [ "$running" -ge "$PARALLEL" ]; then wait -n; running=$((running - 1)); fi
  ( prove "$id" > "$T/$id.log" 2>&1; touch "$T/$id.done" ) &
  running=$((running + 1))
done
checks=0 failures=0 printed=0
while [ "$printed" -lt ${#ids[@]} ]; do
  id=${ids[$printed]}
  if [ -e "$T/$id.done" ]; then
    echo "-- $id"
    cat "$T/$id.log"
    checks=$((checks + $(grep -c '^\(ok  \|FAIL\) ' "$T/$id.log")))
    failures=$((failures + $(grep -c '^FAIL ' "$T/$id.log")))
    printed=$((printed + 1))
  elif [ -z "$(jobs -rp)" ]; then
    echo "-- $id"; echo "FAIL $id: its proof ended without a result"
    checks=$((checks + 1)) failures=$((failures + 1)) printed=$((printed + 1))
  else
    wait -n || true
  fi
done
wait
echo "test-lessons: $((checks - failures)) of $checks checks passed (${#ids[@]} lesson(s), $PARALLEL at a time)"
[ "$failures" -eq 0 ]
