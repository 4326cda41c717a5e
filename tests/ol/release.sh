#!/usr/bin/env bash
# The student release (`ol dist`, issue 21), proved on a scratch copy:
#   1. ol dist writes it; nothing of the reference's source, its mutants'
#      diffs, the model answers, the oracle or the hidden tests is inside
#      (tests/ol/release_leaks.py greps for their distinctive lines); it
#      refuses a folder that exists and leaves no scratch folder behind;
#   2. the copy lives outside the course repository, and its bin/ol takes it
#      as the course (OL_ROOT unset);
#   3. for every lesson with model answers: ol list, ol start, ol tests (the
#      stub fails "not implemented"), then the reference as the student's
#      code with the model answers as their tests: ol check passes there
#      with the same grade as in the course repository (every mutant's
#      status and killers, the score, each stage), and ol diff says where
#      the reference is shown;
#   4. a weaker suite (one file of L7.1's model answers) gets the same
#      survivors and NoCoverage mutants in both, so the coverage build
#      works from its prebuilt objects too;
#   5. the student's loop works in the release as in the course: ol tests
#      --mine, ol check --tests-only (on the stub), a misconception hint for
#      an invalid test, and ol tinyllm (the command line, linked with the
#      student's code and the prebuilt reference of the other lessons), and
#      each milestone the release carries (ol milestone ID --smoke).
# The grades run in the background, four at a time: most of a grade is
# waiting for test programs.
#   tests/ol/release.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export NO_COLOR=1
unset OL_ROOT OL_WORKSPACE OL_TEST_BREAK_CANARY
T=$(mktemp -d "${TMPDIR:-/tmp}/ol-release.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/ol/lib.sh"
field() {
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1])).get(sys.argv[2], "")
print(" ".join(v) if isinstance(v, list) else v)' "$ROOT/course/$1/lesson.json" "$2"
}

lessons=""
for json in "$ROOT"/course/*/lesson.json; do
  id=$(basename "$(dirname "$json")")
  model=$(field "$id" model_tests)
  [ -n "$model" ] && [ -d "$ROOT/$model" ] && lessons="$lessons $id"
done
lessons=${lessons# }

# 1. the release, and what must not be in it
started=$SECONDS
run env OL_ROOT="$ROOT" "$OL" dist "$T/made" --lessons "${lessons// /,}" --quiet
if [ "$rc" = 0 ] && [ -f "$T/made/release.json" ]; then
  files=$(find "$T/made" -type f | wc -l) size=$(du -sh "$T/made" | cut -f1)
  ok "ol dist writes a release of $lessons ($files files, $size, $((SECONDS - started)) s)"
else
  fail "ol dist writes the release"; summary test-release; exit 1
fi
run python3 "$ROOT/tests/ol/release_leaks.py" "$ROOT" "$T/made" $lessons
[ "$rc" = 0 ] && ok "nothing secret inside: ${out##*$'\n'}" \
              || fail "no reference source, mutant diff, model answer, oracle or hidden test inside"
run env OL_ROOT="$ROOT" "$OL" dist "$T/made" --lessons L7.1
[ "$rc" = 2 ] && grep -q "not empty" <<<"$out" && ok "ol dist refuses a folder that exists" \
              || fail "ol dist refuses a folder that exists (rc $rc)"
leftovers=$(find "$T" -maxdepth 1 -name '.ol-dist*' | wc -l)
[ "$leftovers" = 0 ] && ok "ol dist leaves no scratch folder beside the release" \
                     || fail "ol dist leaves no scratch folder beside the release"

# 2. a scratch copy outside the repository, found by its own bin/ol
REL=$T/copy/tinyllm-release
mkdir -p "$T/copy" && cp -r "$T/made" "$REL"
case "$REL/" in "$ROOT"/*) out=""; fail "the scratch copy is outside the repository" ;; esac
ROL=$REL/bin/ol

# grade FILE: what a grade is, from a --json report (statuses, killers, score, stages)
grade() {
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["config"]
ms = {m["id"]: [m["status"], sorted(m.get("killedBy", [])), m["location"]]
      for f in r["files"].values() for m in f["mutants"]}
print(json.dumps({"score": c["score"], "passed": c["passed"],
                  "stages": [s["passed"] for s in c["stages"]], "mutants": ms}, sort_keys=True))
EOF
}

# check_both ID NAME FILES...: one workspace (the reference as the student's
# code, FILES as their tests) graded by the course and by the release, in the
# background; `wait` before reading $T/ID-NAME-SIDE.{json,log,rc}
check_both() {
  local id=$1 name=$2 side; shift 2
  local slug; slug=$(field "$id" student_tests)
  for side in course release; do
    local W=$T/ws-$side-$id-$name
    rm -rf "$W"; mkdir -p "$W/c/$slug"
    for src in $(field "$id" sources); do
      mkdir -p "$W/c/$(dirname "$src")"; cp "$ROOT/reference/$src" "$W/c/$src"
    done
    cp -r "$@" "$W/c/$slug/"
    while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
    if [ "$side" = course ]; then
      ( cd "$W" && OL_ROOT=$ROOT "$OL" check "$id" --ref-deps --json "$T/$id-$name-$side.json" \
          >"$T/$id-$name-$side.log" 2>&1; echo $? >"$T/$id-$name-$side.rc" ) &
    else
      ( cd "$W" && "$ROL" check "$id" --ref-deps --json "$T/$id-$name-$side.json" \
          >"$T/$id-$name-$side.log" 2>&1; echo $? >"$T/$id-$name-$side.rc" ) &
    fi
  done
}

# 3. the student's flow, lesson by lesson; the grades in the background
started=$SECONDS
for id in $lessons; do
  W=$T/student-$id; mkdir -p "$W"; cd "$W" || exit 2
  run "$ROL" list
  [ "$rc" = 0 ] && grep -q "^$id " <<<"$out" && ok "$id: ol list in the release" ||
    fail "$id: ol list in the release"
  run "$ROL" start "$id"
  [ "$rc" = 0 ] && ok "$id: ol start in the release" || fail "$id: ol start in the release"
  run "$ROL" tests "$id" --ref-deps
  silent=$(awk '/^  FAIL /{getline m; if (m !~ /not implemented/) print}' <<<"$out" | wc -l)
  if [ "$rc" = 1 ] && [ "$silent" = 0 ] && ! grep -q '^  pass ' <<<"$out"; then
    ok "$id: ol tests in the release: the stub fails every course test with \"not implemented\""
  else
    fail "$id: ol tests in the release: the stub fails every course test with \"not implemented\""
  fi
  model=$(field "$id" model_tests)
  check_both "$id" model "$ROOT/$model"/*   # tests and the headers they share
done
# 4. survivors and NoCoverage, from the prebuilt coverage build
check_both L7.1 weak "$ROOT/reference/tests/l7-1-rmsnorm/test_my_hand_examples.c"
# 5. the student's loop on L7.1's stub, with the model answers as their tests
S=$T/student-L7.1/c/$(field L7.1 student_tests)
cp "$ROOT/reference/tests/l7-1-rmsnorm/"*.c "$S/"
( cd "$T/student-L7.1" && "$ROL" tests L7.1 --mine >"$T/mine.log" 2>&1; echo $? >"$T/mine.rc"
  "$ROL" check L7.1 --tests-only >"$T/only.log" 2>&1; echo $? >"$T/only.rc" ) &
W=$T/student-hint; mkdir -p "$W/c/tinyllm/modern" "$W/c/$(field L7.1 student_tests)"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" "$W/c/tinyllm/modern/"
cat >"$W/c/$(field L7.1 student_tests)/test_hint.c" <<'EOF'
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"
/* expects eps outside the root: y = x / (sqrt(mean(x^2)) + eps), a known bug */
START_TEST(test_expects_eps_outside)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 2, 1.0, false), 0);
    const float x[2] = {3, 4};
    double r = 1.0 / (sqrt(12.5) + 1.0);
    const float want[2] = {(float)(3 * r), (float)(4 * r)};
    tl_assert_close(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(2))),
                    tl_from_f32(want, TL_SHAPE(2)), 1e-5, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
EOF
( cd "$W" && "$ROL" check L7.1 >"$T/hint.log" 2>&1; echo $? >"$T/hint.rc" ) &
wait

same_grade() { # ID NAME: the two grades, compared
  a=$(grade "$T/$1-$2-course.json" 2>&1) b=$(grade "$T/$1-$2-release.json" 2>&1)
  out="course:  $a"$'\n'"release: $b"
  [ -n "$a" ] && [ "$a" = "$b" ]
}
for id in $lessons; do
  crc=$(cat "$T/$id-model-course.rc") rrc=$(cat "$T/$id-model-release.rc")
  out=$(cat "$T/$id-model-release.log")
  [ "$crc" = 0 ] && [ "$rrc" = 0 ] &&
    ok "$id: ol check in the release passes on the model answers" \
    || fail "$id: ol check in the release passes on the model answers (course rc $crc," \
            "release rc $rrc)"
  if same_grade "$id" model; then
    n=$(grep -o '"[A-Za-z]*", \[' <<<"$b" | wc -l)
    ok "$id: the release's grade is the course's ($n mutants: each status and killer)"
  else
    fail "$id: the release's grade is the course's"
  fi
  cd "$T/ws-release-$id-model" || exit 2
  run "$ROL" diff "$id"
  [ "$rc" = 1 ] && grep -q "grader's report" <<<"$out" &&
    ok "$id: ol diff in the release says where the reference is shown" \
                || fail "$id: ol diff in the release says where the reference is shown (rc $rc)"
done
if same_grade L7.1 weak && grep -q NoCoverage <<<"$b" && grep -q Survived <<<"$b" &&
  grep -q Killed <<<"$b"; then
  ok "L7.1: a weaker suite gets the same Killed, Survived and NoCoverage mutants in the release"
else
  fail "L7.1: a weaker suite gets the same Killed, Survived and NoCoverage mutants in the release"
fi
out=$(cat "$T/mine.log")
[ "$(cat "$T/mine.rc")" = 1 ] && grep -q "your tests on your code" <<<"$out" &&
  grep -q "not implemented" <<<"$out" &&
  ok "L7.1: ol tests --mine in the release runs the student's tests on their stub" ||
  fail "L7.1: ol tests --mine in the release runs the student's tests on their stub"
out=$(cat "$T/only.log")
[ "$(cat "$T/only.rc")" = 0 ] && grep -q "YOUR TESTS PASS at R3 (--tests-only)" <<<"$out" &&
  ok "L7.1: ol check --tests-only in the release grades the tests while the code is a stub" ||
  fail "L7.1: ol check --tests-only in the release grades the tests while the code is a stub"
out=$(cat "$T/L7.1-model-release.log")
grep -q "each the release's one build (the grader builds each its own way)" <<<"$out" &&
  ok "L7.1: ol check in the release says its controls are one fixed build each" ||
  fail "L7.1: ol check in the release says its controls are one fixed build each"
run "$ROL" grade "$T" --lessons L7.1 --out "$T/release-grades"
[ "$rc" = 2 ] && grep -q "this is a student release" <<<"$out" && [ ! -e "$T/release-grades" ] &&
  ok "ol grade in a student release refuses: its fixed builds make grades feedback only" ||
  fail "ol grade in a student release refuses: its fixed builds make grades feedback only"
out=$(cat "$T/hint.log")
[ "$(cat "$T/hint.rc")" = 1 ] &&
  grep -q "hint: test_expects_eps_outside fails on the reference but passes on s01" <<<"$out" &&
  ! grep -q "reference/tinyllm" <<<"$out" &&
  ok "L7.1: an invalid test gets its misconception hint in the release (no reference path)" ||
  fail "L7.1: an invalid test gets its misconception hint in the release (no reference path)"
cd "$T/student-L7.1" || exit 2
run "$ROL" tinyllm
if [ "$rc" = 0 ] && grep -q "your code of L7.1; the reference of" <<<"$out" &&
  ./build/bin/tinyllm 2>&1 | grep -q "^usage: tinyllm"; then
  ok "ol tinyllm in the release links the prebuilt command line with the student's code"
elif [ "$lessons" != "$(cd "$ROOT/course" && ls -d L* | sort -V | xargs)" ]; then
  ok "ol tinyllm: not in a release of some lessons only"
else
  fail "ol tinyllm in the release links the prebuilt command line with the student's code"
fi
# every milestone the release carries (course/*/milestone.json), on its smoke checkpoints
for ms in "$REL"/course/*/milestone.json; do
  [ -f "$ms" ] || continue
  id=$(basename "$(dirname "$ms")")
  run "$ROL" milestone "$id" --smoke --ref-deps
  [ "$rc" = 0 ] && ok "ol milestone $id --smoke in the release: ${out##*$'\n'}" ||
    fail "ol milestone $id --smoke in the release"
done
grades=$(( $(wc -w <<<"$lessons") * 2 + 4 ))
echo "     (the student flow and $grades grades: $((SECONDS - started)) s)"
summary test-release
