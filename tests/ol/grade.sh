#!/usr/bin/env bash
# Grading a class (issue 21, items 3 and 4), on L7.1:
#   ol grade: eleven submissions, two at a time: the model answers (PASS, with
#   the grade a lone `ol check` gives them), a weak suite (FAIL-SCORE), an
#   INVALID one, code that does not compile, an empty folder, two made of
#   symbolic links to the course's reference/ (ERROR, never followed), and
#   four hostile ones: a test that never ends, a fork bomb (bounded at 300
#   processes, so a broken sandbox cannot harm a shared machine), a flood of
#   output, and a test that deletes the other submissions and workspaces by
#   their absolute paths. None of them stops or alters the others: every
#   row of grades.csv is as expected, the submissions are unchanged, the
#   model answers' grade is the lone one, no process is left behind.
#   Progress and the throughput are printed.
#   ol dist --gradescope: the autograder zip, run_autograder run against a
#   folder standing in for /autograder (OL_AUTOGRADER_ROOT) on a model
#   answer (full score), an invalid suite (the reason, partial score), code
#   that does not compile, an empty submission and one whose c/ is a link to
#   the course's reference/ (no score, the reason); each results.json checked
#   against Gradescope's format (tests/ol/gradescope_format.py); hidden
#   tests run there and nowhere in the student release.
# Work happens under build/ (not /tmp), where ol's sandbox can seal it.
#   tests/ol/grade.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY
mkdir -p "$ROOT/build"
T=$(mktemp -d "$ROOT/build/test-grade.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/ol/lib.sh"

REF=$ROOT/reference/tinyllm/modern/rmsnorm.c MODEL=$ROOT/reference/tests/l7-1-rmsnorm
S=$T/submissions OUT=$T/grades
# student NAME: a submission with the reference as its code and an empty test folder
student() {
  mkdir -p "$S/$1/c/tinyllm/modern" "$S/$1/c/tests/l7-1-rmsnorm"
  cp "$REF" "$S/$1/c/tinyllm/modern/"
}
hostile() { # NAME TEST_BODY: one model-answer file plus a test doing TEST_BODY
  student "$1"; cp "$MODEL/test_my_hand_examples.c" "$S/$1/c/tests/l7-1-rmsnorm/"
  # the include rule allows standard C headers only: POSIX calls are declared by hand
  printf '%s\n' '#include <check.h>' '#include <stdio.h>' '#include <stdlib.h>' \
    '#include <string.h>' '#include "tinyllm/modern/rmsnorm.h"' \
    'int fork(void);' 'unsigned sleep(unsigned);' '_Noreturn void _exit(int);' \
    '' "START_TEST(my_$2)" '{' "$3" '}' 'END_TEST' \
    >"$S/$1/c/tests/l7-1-rmsnorm/test_hostile.c"
}
student alice; cp "$MODEL"/*.c "$S/alice/c/tests/l7-1-rmsnorm/"
student bob; cp "$MODEL/test_my_hand_examples.c" "$S/bob/c/tests/l7-1-rmsnorm/"
student carol; cp "$MODEL/test_my_hand_examples.c" "$S/carol/c/tests/l7-1-rmsnorm/"
cat >"$S/carol/c/tests/l7-1-rmsnorm/test_wrong.c" <<'EOF'
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rmsnorm.h"
START_TEST(my_wrong_expectation)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 4, 0.0, false), 0);
    tl_assert_close(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(1, 4))),
                    tl_full(TL_F32, TL_SHAPE(1, 4), 2.0), 0.0, 0.0);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
EOF
student dave; cp "$MODEL"/*.c "$S/dave/c/tests/l7-1-rmsnorm/"
echo 'int broken(void) { return }' >>"$S/dave/c/tinyllm/modern/rmsnorm.c"
mkdir -p "$S/erin"
# links to the course's own reference/ (the model answers and the reference): never followed
mkdir -p "$S/mallory-link" && ln -s "$ROOT/reference" "$S/mallory-link/c"
ln -s "$ROOT/reference" "$S/trudy"
hostile mallory-loop endless_loop '    for (volatile int x = 0;; x++) {}'
hostile mallory-fork fork_bomb '    for (int i = 0; i < 300; i++) {
        int p = fork();
        if (p == 0) { sleep(60); _exit(0); }
        if (p < 0) break;
    }'
hostile mallory-flood flood '    static char line[65536];
    memset(line, 120, sizeof line - 1);
    for (;;) fputs(line, stdout);'
# the deleter knows where everything is: it aims at the others by absolute path
hostile mallory-rm delete_everything "    const char *victims[] = {\"$S/alice\", \"$S/bob\",
        \"$OUT/work/alice\", \"$OUT/alice\", \"$OUT/work\", \"$ROOT/course/L7.1\"};
    for (unsigned i = 0; i < sizeof victims / sizeof *victims; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, \"rm -rf '%s' 2>/dev/null\", victims[i]);
        if (system(cmd)) {}
    }"
tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
before=$(tree_hash "$S") course_before=$(tree_hash "$ROOT/course/L7.1")

# alice alone, for the grade ol grade must not change
mkdir -p "$T/alone" && cp -r "$S/alice/c" "$T/alone/c"
( cd "$T/alone" && "$OL" check L7.1 --ref-deps --json "$T/alone.json" >"$T/alone.log" 2>&1 )

started=$SECONDS
run "$OL" grade "$S" --lessons L7.1 --jobs 2 --out "$OUT" --timeout 300
elapsed=$((SECONDS - started))
printf '%s\n' "$out" >"$T/grade.log"
# exit 1: the two linked submissions are rows that could not be graded
[ "$rc" = 1 ] && [ -f "$OUT/grades.csv" ] &&
  grep -q "2 rows of grades.csv could not be graded" <<<"$out" &&
  ok "ol grade grades 11 submissions, 2 at a time, and writes grades.csv (${elapsed} s)" \
              || fail "ol grade grades 11 submissions and writes grades.csv (rc $rc)"
grep -q '^\[11/11\] .*elapsed .*slowest so far' <<<"$out" &&
  ok "progress: done/total, elapsed, the slowest so far" \
  || fail "progress: done/total, elapsed, the slowest so far"
grep -o '([0-9.]* a minute)' <<<"$out" | sed 's/^/     throughput /'
nmutants=$(ls "$ROOT"/course/L7.1/mutants/*.mutant | wc -l)
run python3 - "$OUT/grades.csv" "$nmutants" <<'EOF'
import csv, sys
rows = {r["student"]: r for r in csv.DictReader(open(sys.argv[1]))}
want = {"alice": "PASS", "bob": "FAIL-SCORE", "carol": "INVALID", "dave": "FAIL-BUILD",
        "erin": "NOT-SUBMITTED", "mallory-loop": "INVALID", "mallory-fork": None,
        "mallory-flood": "INVALID", "mallory-rm": None, "mallory-link": "ERROR",
        "trudy": "ERROR"}
assert set(rows) == set(want), sorted(rows)
header = open(sys.argv[1]).readline().strip()
assert header == "student,lesson,verdict,score,killed/valid,invalid tests", header
for s, v in want.items():
    r = rows[s]
    assert r["lesson"] == "L7.1", r
    if v: assert r["verdict"] == v, (s, r)
    else: assert r["verdict"] not in ("ERROR", "TIMEOUT"), (s, r)   # graded, whatever the verdict
alice = rows["alice"]
every = f"{sys.argv[2]}/{sys.argv[2]}"   # every mutant of L7.1 killed
assert alice["score"] == "1.0000" and alice["killed/valid"] == every, alice
assert rows["carol"]["invalid tests"] == "my_wrong_expectation", rows["carol"]
assert rows["mallory-loop"]["invalid tests"] == "my_endless_loop", rows["mallory-loop"]
assert rows["mallory-flood"]["invalid tests"] == "my_flood", rows["mallory-flood"]
for s, r in sorted(rows.items()):
    print(f"{s}: {r['verdict']} {r['score']} {r['killed/valid']} {r['invalid tests']}")
EOF
[ "$rc" = 0 ] && ok "every row of grades.csv is as expected: $(tr '\n' ';' <<<"$out")" ||
  fail "every row of grades.csv is as expected"
grep -q "mallory-link/c is a symbolic link" "$OUT/mallory-link/error.txt" 2>/dev/null &&
  grep -q "trudy is a symbolic link" "$OUT/trudy/error.txt" 2>/dev/null &&
  ok "a submission that is, or holds, a link is not graded, and error.txt says which link" ||
  fail "a submission that is, or holds, a link is not graded, and error.txt says which link"
after=$(tree_hash "$S") course_after=$(tree_hash "$ROOT/course/L7.1")
out="submissions: $before -> $after; course: $course_before -> $course_after"
[ "$before" = "$after" ] && [ "$course_before" = "$course_after" ] \
  && ok "the submissions and the course are unchanged after the hostile ones ran" \
  || fail "the submissions and the course are unchanged after the hostile ones ran"
grade_of() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); c = r["config"]
print(json.dumps([c["score"], c["passed"], [s["passed"] for s in c["stages"]],
  {m["id"]: [m["status"], sorted(m.get("killedBy", []))]
   for f in r["files"].values() for m in f["mutants"]}], sort_keys=True))' "$1"
}
a=$(grade_of "$T/alone.json" 2>&1) b=$(grade_of "$OUT/alice/L7.1.json" 2>&1)
out="alone: $a"$'\n'"ol grade: $b"
[ -n "$a" ] && [ "$a" = "$b" ] &&
  ok "alice's grade among the hostile submissions is the one ol check gives her alone" \
  || fail "alice's grade among the hostile submissions is the one ol check gives her alone"
for f in L7.1.txt L7.1.json L7.1.gradescope.json L7.1.html; do
  [ -s "$OUT/alice/$f" ] || { out=$(ls -la "$OUT/alice"); fail "each student's reports: $f"; }
done
ok "each student's reports are kept (text, JSON, HTML, Gradescope's)"
[ ! -e "$OUT/work" ] && ok "the workspaces are removed once graded" ||
  { out=""; fail "the workspaces are removed once graded"; }
size=$(du -sk "$OUT/mallory-flood" | cut -f1)
[ "$size" -lt 4096 ] && ok "the flood left $size KiB of reports" ||
  { out=""; fail "the flood left $size KiB of reports"; }
left=$(for p in /proc/[0-9]*; do readlink "$p/cwd" 2>/dev/null; done | grep -c "^$T" || true)
out=""
[ "$left" = 0 ] && ok "no process of a submission is left running" ||
  fail "no process of a submission is left running ($left)"
run "$OL" grade "$S" --lessons L7.1 --out "$OUT"
[ "$rc" = 2 ] && grep -q "not empty" <<<"$out" && ok "ol grade refuses to overwrite grades" ||
  fail "ol grade refuses to overwrite grades (rc $rc)"

# the Gradescope autograder
run "$OL" dist --gradescope "$T/autograder.zip" --lessons L7.1 --quiet
[ "$rc" = 0 ] && [ -f "$T/autograder.zip" ] &&
  ok "ol dist --gradescope writes the autograder zip" ||
  fail "ol dist --gradescope writes the autograder zip"
files=$(unzip -Z1 "$T/autograder.zip")
grep -qx setup.sh <<<"$files" && grep -qx run_autograder <<<"$files" &&
  unzip -Z "$T/autograder.zip" run_autograder | grep -q '^-rwx' \
  && ok "the zip has setup.sh and an executable run_autograder at its top" ||
    { out=$files; fail "the zip has setup.sh and run_autograder at its top"; }
run env OL_SETUP_DRY_RUN=1 bash -c "cd $T && unzip -p autograder.zip setup.sh | bash"
grep -q "^apt-get install .*gcc-12 .*patch .*check .*libcjson-dev" <<<"$out" &&
  ok "setup.sh installs what ol needs with apt-get ($out)" \
  || fail "setup.sh installs what ol needs with apt-get"
autograde() { # NAME SUBMISSION_SETUP...: a fresh /autograder stand-in, the submission copied in
  local A=$T/ag-$1; mkdir -p "$A/source" "$A/submission"
  (cd "$A/source" && unzip -q "$T/autograder.zip")
  [ -d "$2" ] && cp -r "$2"/. "$A/submission/"
  OL_AUTOGRADER_ROOT=$A bash "$A/source/run_autograder" >"$T/ag-$1.log" 2>&1
  echo "$A/results/results.json"
}
declare -A gs_want=([alice]=6 [carol]=3 [dave]=0 [erin]=0 [mallory-link]=0)
for s in alice carol dave erin mallory-link; do
  res=$(autograde "$s" "$S/$s")
  run python3 "$ROOT/tests/ol/gradescope_format.py" "$res" "${gs_want[$s]}"
  [ "$rc" = 0 ] && ok "run_autograder on $s: results.json in Gradescope's format, $out" \
  || { out="$out"$'\n'"$(tail -5 "$T/ag-$s.log")"
       fail "run_autograder on $s: results.json in Gradescope's format, score ${gs_want[$s]}"; }
done
run python3 - "$T"/ag-{carol,alice,erin,mallory-link}/results/results.json <<'EOF'
import json, sys
carol, alice, erin, link = (json.load(open(p)) for p in sys.argv[1:])
assert all(t["score"] == 0 for t in link["tests"]), link["tests"]
assert "c in your submission is a symbolic link" in link["tests"][0]["output"], link["tests"][0]
stage4 = next(t for t in carol["tests"] if t["name"].startswith("L7.1 4."))
assert stage4["status"] == "failed", stage4
assert "INVALID" in stage4["output"] and "my_wrong_expectation" in stage4["output"], stage4
assert any("reference (your lesson passed)" in t["name"] and "```c" in t["output"]
           for t in alice["tests"])
assert not any("your lesson passed" in t["name"] for t in carol["tests"])
assert "course tests pass on your code: all 17 pass" in alice["output"], "no hidden test ran"
first = erin["tests"][0]
assert "not graded" in first["name"] and first["max_score"] == 6, erin["tests"]
print("ok")
EOF
[ "$rc" = 0 ] &&
  ok "the invalid suite's results say why (INVALID, the test); a pass shows the reference;" \
     "the hidden tests ran (17 course tests); a linked c/ is not graded and says so" \
  || fail "the invalid suite's results say why; a pass shows the reference; hidden tests ran"
summary "test-grade"
