#!/usr/bin/env bash
# End-to-end tests of ol on lesson L7.1, in scratch workspaces (and, for the
# instructor verbs, a scratch copy of the course). Each check prints "ok" or
# "FAIL" with what went wrong; the script fails if any did.
#   tests/ol/e2e.sh OL_BINARY REPORT_CHECK_BINARY
set -u
OL=$(realpath "$1")
REPORT_CHECK=$(realpath "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY OL_VERBOSE CK_RUN_SUITE CK_RUN_CASE
# under build/, not /tmp: tests may write /tmp, so a workspace there cannot be sealed off
mkdir -p "$ROOT/build"
T=$(mktemp -d "$ROOT/build/ol-e2e.XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0 checks=0

ok()   { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1"; printf '%s\n' "${out:-}" | sed 's/^/     | /' | tail -40; }
# run CMD...: sets $out (stdout and stderr) and $rc
run() { out=$("$@" 2>&1); rc=$?; }
# expect NAME RC [TEXT...]: the last run exited RC and printed every TEXT
expect() {
  local name=$1 want=$2; shift 2
  if [ "$rc" != "$want" ]; then fail "$name (exit $rc, expected $want)"; return; fi
  local t
  for t in "$@"; do
    if ! grep -qF -- "$t" <<<"$out"; then fail "$name (no \"$t\" in the output)"; return; fi
  done
  ok "$name"
}
# unsealed: ol said the sandbox cannot seal the course or the workspace (they lie in /tmp)
unsealed() { grep -qF "so the sandbox cannot keep" <<<"$out"; }
# absent NAME TEXT: the last run did not print TEXT
absent() { if grep -qF -- "$2" <<<"$out"; then fail "$1 (\"$2\" was printed)"; else ok "$1"; fi; }

TESTS=c/tests/l7-1-rmsnorm
# set_tests FILE CONTENT: the student's test folder holds only FILE
set_tests() { rm -rf "$TESTS"; mkdir -p "$TESTS"; printf '%s\n' "$2" > "$TESTS/$1"; }
HEAD='#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"'

# ---- ol start ----------------------------------------------------------
W=$T/ws; mkdir -p "$W"; cd "$W" || exit 2
run "$OL" start L7.1
expect "start copies the stub and makes the test folder" 0 "created c/tinyllm/modern/rmsnorm.c" \
  "c/tests/l7-1-rmsnorm/" "Rung R3"
[ -f "$TESTS/test_example.c" ] && ok "start writes one example test" || fail "start writes one example test"
echo "/* my work */" >> c/tinyllm/modern/rmsnorm.c
echo "/* my test */" >> "$TESTS/test_example.c"
cp c/tinyllm/modern/rmsnorm.c "$T/mine.c"; cp "$TESTS/test_example.c" "$T/mytest.c"
run "$OL" start L7.1
expect "start again keeps the student's files" 0 "kept    c/tinyllm/modern/rmsnorm.c"
cmp -s c/tinyllm/modern/rmsnorm.c "$T/mine.c" && cmp -s "$TESTS/test_example.c" "$T/mytest.c" \
  && ok "start never overwrites" || fail "start never overwrites"
run "$OL" start L9.9
expect "start refuses an unknown lesson" 2 "no lesson L9.9"
for cmd in list start tests check diff mutants fixtures hub; do
  run "$OL" $cmd --help
  expect "ol $cmd --help" 0 "usage: ol"
done
run "$OL" frobnicate
expect "an unknown command is a usage error" 2 "not a command"

# ---- ol tests ----------------------------------------------------------
run "$OL" tests L7.1
expect "tests: the stub fails with \"not implemented\"" 1 "not implemented" "FAIL"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1
expect "tests: the reference as the student's code passes" 0 "passed, 0 failed"
run "$OL" tests L7.1 -k golden
expect "tests -k runs only the matching tests" 0 "pass test_golden"
absent "tests -k leaves the others out" "test_eps_inside"
run "$OL" tests L7.1 -k no_such_test
expect "tests -k with no match is a usage error" 2 "no course test"
run "$OL" tests
expect "tests without a lesson is a usage error" 2 "give one lesson"
# a failure names the test, the check and file:line
sed 's/return tl_mul(normed, scale);/return tl_mul(normed, tl_mul_scalar(scale, 2.0));/' \
  "$ROOT/reference/tinyllm/modern/rmsnorm.c" > c/tinyllm/modern/rmsnorm.c
if cmp -s c/tinyllm/modern/rmsnorm.c "$ROOT/reference/tinyllm/modern/rmsnorm.c"; then
  fail "tests: could not inject a bug (the reference changed: update e2e.sh)"
else
  run "$OL" tests L7.1
  expect "tests: a failure names the test and file:line" 1 "FAIL test_golden_matches_hf" "tests/L7.1/test_golden.c:"
fi
echo "this is not C" >> c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1
expect "tests: code that does not compile fails with the compiler's message" 1 "error:" "does not compile"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c

# ---- ol check: the stages and their failures ---------------------------
run "$OL" diff L7.1
expect "diff is refused before a passing check" 1 "only after"
set_tests test_empty.c "/* nothing yet */"
run "$OL" check L7.1
expect "check: an empty suite fails with \"no tests\"" 1 "no tests" "skip  Canary"
set_tests test_bad.c "$HEAD
#include \"../../tinyllm/modern/rmsnorm.c\"
START_TEST(test_x) { ck_assert(1); } END_TEST"
run "$OL" check L7.1
expect "check: a non-contract include is refused with file:line" 1 "test_bad.c:5: error:" "not allowed"
set_tests test_calls_nothing.c "$HEAD
START_TEST(test_nothing) { ck_assert_int_eq(1, 1); } END_TEST"
run "$OL" check L7.1
expect "check: a suite that calls no lesson function fails the canary" 1 "none of your tests calls"
ASSERTS_NOTHING="$HEAD
START_TEST(test_runs_but_checks_nothing)
{
    tl_scope_push();
    RMSNorm n;
    rmsnorm_init(&n, 4, 1e-6, false);
    const float x[4] = {1, 2, 3, 4};
    rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(4)));
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST"
set_tests test_weak.c "$ASSERTS_NOTHING"
run "$OL" check L7.1 --json "$T/weak.json"
expect "check: a suite that asserts nothing fails with survivors" 1 "warning: Survived:" \
  "reference/tinyllm/modern/rmsnorm.c:" "Mutation score: 0.00" "Tests that kill no mutant: test_runs_but_checks_nothing" \
  "warning: NoCoverage:" "no test of yours executes this line"
if grep -q 'tl_rsqrt' "$T/weak.json"; then out=$(head -c 2000 "$T/weak.json"); fail "check --json hides the reference until a pass"
else ok "check --json hides the reference until a pass"; fi
run "$REPORT_CHECK" stryker "$T/weak.json"
expect "check --json with survivors is a valid Stryker report" 0 "valid stryker report"
OL_TEST_BREAK_CANARY=1 run "$OL" check L7.1
expect "check: a canary that survives the course tests is a broken harness (exit 2)" 2 "harness is broken"
set_tests test_wrong.c "$HEAD
START_TEST(test_always_fails) { ck_abort_msg(\"this test always fails\"); } END_TEST
/* x = [3, 4]: the reference gives [0.8485..., 1.1313...]; this expects [1, 1] */
START_TEST(test_wrong_expectation)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 2, 0.0, false), 0);
    const float x[2] = {3, 4}, ones[2] = {1, 1};
    tl_assert_close(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(2))), tl_from_f32(ones, TL_SHAPE(2)), 1e-6, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST"
run "$OL" check L7.1
expect "check: a test failing on the reference is INVALID, named with file:line" 1 "INVALID" \
  "test_wrong_expectation" "test_wrong.c:13"
expect "check: an always-failing test is INVALID, named with file:line" 1 "test_always_fails" "test_wrong.c:5"
absent "check: INVALID never shows the reference's values" "0.848"
absent "check: INVALID never shows the reference's values (2)" "1.131"

# ---- ol check: what a dishonest or clumsy suite gets ---------------------
# A test that runs every line of the lesson and checks nothing about it.
TOUCH='static tl_tensor *twice(tl_tensor *x, void *ctx) { (void)ctx; return tl_mul_scalar(x, 2.0); }
static void touch_lesson(void)
{
    tl_scope_push();
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int gemma = 0; gemma < 2; gemma++) {
        RMSNorm n;
        ck_assert_int_eq(rmsnorm_init(&n, 4, 1e-6, gemma), 0);
        tl_assert_ok(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(2, 4))));
        tl_assert_ok(pre_norm_residual(tl_from_f32(x, TL_SHAPE(2, 4)), &n, twice, NULL));
        rmsnorm_free(&n);
    }
    tl_scope_pop();
}'
STD='#include <stdio.h>
#include <stdlib.h>
#include <string.h>'
# it fails wherever ol's environment differs from the reference's run: the timeout it is given
set_tests test_env.c "$HEAD
$STD
$TOUCH
START_TEST(test_timeout_says_reference) { touch_lesson(); ck_assert_str_eq(getenv(\"OL_TEST_TIMEOUT\"), \"10\"); } END_TEST"
run "$OL" check L7.1
expect "check: a test that tells mutants by an environment variable is INVALID (the wheats and the reference run among them)" 1 \
  "INVALID" "run among the mutants" "test_timeout_says_reference" "built another way and run among the mutants"
absent "check: ... and gets no mutation score" "valid mutants"
# it passes where the timeout says "reference", and fails 9 times in 10 elsewhere: mutants killed by
# chance; the controls (the reference, as many times as there are mutants) cannot all pass
set_tests test_dice.c "$HEAD
$STD
#include <time.h>
$TOUCH
int getpid(void);
START_TEST(test_fails_by_chance)
{
    touch_lesson();
    if (strcmp(getenv(\"OL_TEST_TIMEOUT\"), \"10\") == 0) return;
    srand((unsigned)time(NULL) * 31u + (unsigned)getpid());
    ck_assert_int_eq(rand() % 10, 0); /* fails 9 times in 10 */
}
END_TEST"
run "$OL" check L7.1
expect "check: a test failing at random to kill mutants by chance is INVALID" 1 "INVALID" "test_fails_by_chance"
# it passes the first three runs (the reference and two wheats), then fails: state in /tmp
COUNT=/tmp/ol-e2e-count-$$
rm -f "$COUNT"
set_tests test_state.c "$HEAD
$STD
$TOUCH
static int runs_so_far(void)
{
    FILE *f = fopen(\"$COUNT\", \"a+\");
    int n = 0, c;
    rewind(f);
    while ((c = fgetc(f)) != EOF) n += c == '\\n';
    fputs(\"run\\n\", f);
    fclose(f);
    return n;
}
START_TEST(test_first_three_runs_pass) { touch_lesson(); ck_assert_int_lt(runs_so_far(), 3); } END_TEST"
run "$OL" check L7.1
if grep -q "no namespaces" <<<"$out"; then
  expect "check: a test that passes only on the first runs (state in the shared /tmp) is INVALID" 1 "INVALID" \
    "test_first_three_runs_pass" "make each test start from nothing"
else
  expect "check: a test that keeps state in /tmp finds it empty on every run (its own /tmp): it kills nothing" 1 \
    "[4/6] PASS" "Tests that kill no mutant: test_first_three_runs_pass"
fi
rm -f "$COUNT"
# it reads its own program for the folder a variant was patched in, and the course's mutants
set_tests test_self.c "$HEAD
$STD
$TOUCH
static char *slurp(const char *p)
{
    FILE *f = fopen(p, \"rb\");
    if (!f) return NULL;
    char *b = malloc(8 << 20);
    size_t n = fread(b, 1, (8 << 20) - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) b[i] = b[i] ? b[i] : 1;
    b[n] = 0;
    return b;
}
START_TEST(test_fails_on_a_patched_variant)
{
    touch_lesson();
    char needle[64], root[4096];
    snprintf(needle, sizeof needle, \"/build/ol/%s/\", \"patched\"); /* not one literal: it would match itself */
    char *exe = slurp(\"/proc/self/exe\"); /* NULL where the program is execute-only */
    snprintf(root, sizeof root, \"%s/../course/L7.1/mutants/s01-eps-outside-sqrt.mutant\", getenv(\"TINYLLM_FIXTURES\"));
    ck_assert_msg((exe == NULL || strstr(exe, needle) == NULL) && slurp(root) == NULL, \"a mutant, or a wheat\");
}
END_TEST"
run "$OL" check L7.1
if unsealed; then
  # the course itself lies in /tmp, which tests may read: the test then fails on the reference too
  expect "check: a test that reads the course (unsealed: the course is under /tmp) is INVALID" 1 "INVALID" \
    "test_fails_on_a_patched_variant"
else
  expect "check: a test that reads its own program or the course's mutants catches nothing" 1 "Mutation score: 0.00" \
    "Tests that kill no mutant: test_fails_on_a_patched_variant"
fi
# it always fails, but first writes a pass into every file Check's runner has open
set_tests test_forge.c "$HEAD
$STD
$TOUCH
long write(int fd, const void *buf, unsigned long n); /* no <unistd.h>: the include rule */
START_TEST(test_forged_pass)
{
    touch_lesson();
    const char *line = \"ok 1 - test_forge.c:test_forge.c:test_forged_pass: Passed\\n\";
    for (int fd = 3; fd < 64; fd++) write(fd, line, strlen(line));
    ck_abort_msg(\"this test always fails\");
}
END_TEST"
run "$OL" check L7.1
expect "check: a test that forges a pass in Check's log is not believed (INVALID)" 1 "INVALID" "test_forged_pass" \
  "no trustworthy result"
# the sandbox: the course (but its fixtures) and the workspace are out of reach, /tmp is not
set_tests test_sandbox.c "$HEAD
$STD
$TOUCH
static int readable(const char *path)
{
    FILE *f = fopen(path, \"r\");
    if (f) fclose(f);
    return f != NULL;
}
START_TEST(test_only_the_fixtures_and_tmp_are_in_reach)
{
    touch_lesson();
    const char *fixtures = getenv(\"TINYLLM_FIXTURES\");
    char path[8192];
    snprintf(path, sizeof path, \"%s/L7.1/rmsnorm.safetensors\", fixtures);
    ck_assert_msg(readable(path), \"the fixtures are readable\");
    snprintf(path, sizeof path, \"%s/../reference/tinyllm/modern/rmsnorm.c\", fixtures);
    ck_assert_msg(!readable(path), \"the reference is out of reach\");
    snprintf(path, sizeof path, \"%s/../course/L7.1/lesson.json\", fixtures);
    ck_assert_msg(!readable(path), \"the course is out of reach\");
    /* the working folder is WS/build/ol/tmp/run.X/work */
    ck_assert_msg(!readable(\"../../../../../c/tinyllm/modern/rmsnorm.c\"), \"the student's code is out of reach\");
    ck_assert_msg(fopen(\"../../../../../c/tinyllm/modern/rmsnorm.c\", \"a\") == NULL, \"the student's code is read-only\");
    ck_assert_msg(fopen(\"../../../run/poisoned.json\", \"w\") == NULL, \"ol's cache is out of reach\");
    FILE *t = tmpfile();
    ck_assert_msg(t != NULL, \"/tmp is writable\");
    fclose(t);
}
END_TEST"
cp c/tinyllm/modern/rmsnorm.c "$T/before-sandbox.c"
run "$OL" check L7.1
if grep -q "no Landlock" <<<"$out"; then
  echo "skip check: the sandbox (this kernel has no Landlock)"
elif unsealed; then
  # reads of the course succeed, so the test fails on the reference: detected, not prevented
  expect "check: unsealed (the course is under /tmp), a test that reaches the course is INVALID" 1 "INVALID" \
    "test_only_the_fixtures_and_tmp_are_in_reach"
else
  expect "check: tests run sandboxed (fixtures and /tmp only; not the course, the code or ol's cache)" 1 \
    "[4/6] PASS" "Mutation score: 0.00"
  cmp -s c/tinyllm/modern/rmsnorm.c "$T/before-sandbox.c" && ok "check: a test cannot write the student's code" \
    || fail "check: a test cannot write the student's code"
fi
# where the kernel has no Landlock, a test that writes the student's code is at least noticed
set_tests test_writer.c "$HEAD
$STD
$TOUCH
START_TEST(test_appends_to_the_code)
{
    touch_lesson();
    FILE *f = fopen(\"../../../../../c/tinyllm/modern/rmsnorm.c\", \"a\"); /* WS/build/ol/tmp/run.X/work */
    if (f) { fputs(\"/* a test was here */\\n\", f); fclose(f); }
}
END_TEST"
chmod 666 c/tinyllm/modern/rmsnorm.c # writable by the test's own user too (when ol is root)
OL_TEST_NO_NAMESPACES=1 OL_TEST_NO_LANDLOCK=1 run "$OL" check L7.1
expect "check without namespaces or Landlock says what the sandbox cannot do" 1 "no namespaces" "no Landlock"
expect "check without namespaces or Landlock: a test that writes the student's code is INVALID, the file named" 1 \
  "INVALID: files changed while your tests ran (c/tinyllm/modern/rmsnorm.c)"
cp "$T/before-sandbox.c" c/tinyllm/modern/rmsnorm.c
OL_TEST_NO_LANDLOCK=1 run "$OL" check L7.1
cmp -s c/tinyllm/modern/rmsnorm.c "$T/before-sandbox.c" && ok "check without Landlock, jailed: a test cannot reach the student's code" \
  || fail "check without Landlock, jailed: a test cannot reach the student's code"
cp "$T/before-sandbox.c" c/tinyllm/modern/rmsnorm.c; chmod 644 c/tinyllm/modern/rmsnorm.c
# the include rule is the preprocessor's: a macro, a trigraph, a line continuation, a header of
# the test folder, a symlink out of it and .incbin are each refused; an #include under #if 0 is not
INTERNAL=$ROOT/reference/tinyllm/core/internal.h
rm -rf "$TESTS"; mkdir -p "$TESTS"
printf '%s\n' "$HEAD" "#define H \"$INTERNAL\"" '#include H' 'START_TEST(test_m) { ck_assert(1); } END_TEST' > "$TESTS/test_macro.c"
printf '%s\n' "$HEAD" "??=include \"$INTERNAL\"" 'START_TEST(test_t) { ck_assert(1); } END_TEST' > "$TESTS/test_trigraph.c"
printf '%s\n' "$HEAD" '#inc\' "lude \"$INTERNAL\"" 'START_TEST(test_c) { ck_assert(1); } END_TEST' > "$TESTS/test_continued.c"
printf '%s\n' "$HEAD" '#include "helpers.h"' 'START_TEST(test_h) { ck_assert(1); } END_TEST' > "$TESTS/test_helper.c"
printf '%s\n' '#include "tinyllm/tensor.h"' "#include \"$INTERNAL\"" > "$TESTS/helpers.h"
printf '%s\n' "$HEAD" "__asm__(\".in\" \"cbin \\\"$ROOT/reference/tinyllm/modern/rmsnorm.c\\\"\");" \
  'START_TEST(test_i) { ck_assert(1); } END_TEST' > "$TESTS/test_incbin.c"
printf '%s\n' "$HEAD" '#if 0' "#include \"$INTERNAL\"" '#endif' 'START_TEST(test_off) { ck_assert(1); } END_TEST' > "$TESTS/test_off.c"
run "$OL" check L7.1
# the compiler's sandbox refuses to open the reference's header; the rule says why, where
expect "check: the include rule follows the preprocessor (macro, trigraph, continuation, helper header)" 1 \
  "test_macro.c:5: error:" "test_trigraph.c:5: error:" "test_continued.c:6: error:" "helpers.h:2: error:" \
  "reference/tinyllm/core/internal.h\" is not allowed" "6 problems in your test files"
expect "check: a test embedding a file with asm (.incbin) is refused" 1 "test_incbin.c:5: error: asm"
absent "check: an #include under #if 0 does not count" "test_off.c"
set_tests test_link.c "$HEAD
#include \"shortcut.h\"
START_TEST(test_l) { ck_assert(1); } END_TEST"
ln -s "$INTERNAL" "$TESTS/shortcut.h"
run "$OL" check L7.1
expect "check: a symbolic link in the test folder is refused by name" 1 \
  "c/tests/l7-1-rmsnorm/shortcut.h is a symbolic link"
# clumsy: a START_TEST under #if 0, a test named in UTF-8, a syntax error, a crash, a flood of output
set_tests test_clumsy.c "$HEAD
#if 0
START_TEST(test_switched_off) { ck_assert(0); } END_TEST
#endif
START_TEST(test_été) { ck_assert(1); } END_TEST"
run "$OL" check L7.1
expect "check: a START_TEST under #if 0 is named with file:line, not a wrapper's error" 1 \
  "test_clumsy.c:6: error: START_TEST(test_switched_off) is not compiled"
expect "check: a test named in UTF-8 is named" 1 "the test name test_été has letters beyond ASCII"
absent "check: no error from testgen's wrapper" "wrap_0.c"
set_tests test_typo.c "$HEAD
START_TEST(test_typo)
{
    int x = ;
    ck_assert(x);
}
END_TEST"
run "$OL" check L7.1
expect "check: a test that does not compile fails with the compiler's file:line" 1 "test_typo.c:7:" "error: expected expression" \
  "your tests do not compile"
absent "check: the compiler's message does not name ol's generated wrapper" "build/ol/gen"
set_tests test_crash.c "$HEAD
$STD
$TOUCH
START_TEST(test_crashes) { touch_lesson(); volatile int *p = NULL; *p = 1; } END_TEST
START_TEST(test_floods) { touch_lesson(); for (;;) fputs(\"a line of output that never ends\\n\", stdout); } END_TEST"
run "$OL" check L7.1
expect "check: a test that crashes on the reference is INVALID, the signal named" 1 "INVALID" \
  "FAIL test_crashes: crashed with signal 11 (Segmentation fault)"
expect "check: a test flooding its output ends at the file-size limit, said plainly" 1 "FAIL test_floods: crashed with signal 25" \
  "a test may write at most"
set_tests test_one.c "$HEAD
START_TEST(test_same) { ck_assert(1); } END_TEST"
cp "$TESTS/test_one.c" "$TESTS/test_two.c"
run "$OL" check L7.1
expect "check: two tests of one name in two files are refused, both files named" 1 \
  "the test test_same is defined twice, in test_one.c and test_two.c"
rm -rf "$TESTS"
run "$OL" check L7.1
expect "check: a missing test folder is \"no tests\", score 0" 1 "no tests: c/tests/l7-1-rmsnorm/ does not exist"

# a workspace whose path holds spaces, shell metacharacters and a double quote: no shell, no
# quoting, anywhere (the student's test file is #included by that path)
WEIRD="$T/a dir; \$(touch PWNED) \`id\` & 'q' \"dq\" *"
mkdir -p "$WEIRD"
(cd "$WEIRD" && "$OL" start L7.1 > /dev/null && cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c \
  && rm -f "$TESTS"/*.c && printf '%s\n' "$HEAD" "$TOUCH" 'START_TEST(test_runs) { touch_lesson(); } END_TEST' > "$TESTS/test_runs.c")
run "$OL" check L7.1 --workspace "$WEIRD"
expect "check in a workspace whose path has spaces, \$(...), quotes and *" 1 "[3/6] PASS" "[4/6] PASS" "Mutation score: 0.00"
[ ! -e PWNED ] && [ ! -e "$WEIRD/PWNED" ] && ok "check: nothing in the workspace's path is run by a shell" \
  || fail "check: nothing in the workspace's path is run by a shell"

# ---- ol check: the model answer ----------------------------------------
rm -rf "$TESTS"; mkdir -p "$TESTS"; cp "$ROOT"/reference/tests/l7-1-rmsnorm/*.c "$TESTS/"
runtime_before=$(cat "$ROOT"/build/lib/libtinyllm_*.a | sha256sum)
run "$OL" check L7.1 --json "$T/stryker.json" --gradescope "$T/gradescope.json"
expect "check: the model-answer tests pass (exit 0)" 0 "PASS: L7.1 reaches R3" "Required pitfalls: all"
run "$REPORT_CHECK" stryker "$T/stryker.json"
expect "check --json is a valid Stryker report (schema 2)" 0 "valid stryker report"
grep -q 'tl_rsqrt' "$T/stryker.json" && ok "check --json shows the reference after a pass" \
  || fail "check --json shows the reference after a pass"
run "$REPORT_CHECK" gradescope "$T/gradescope.json"
expect "check --gradescope is a valid results.json" 0 "valid gradescope report"

OL_VERBOSE=1 run "$OL" check L7.1
expect "check: a rerun passes again" 0 "PASS: L7.1"
if [ "$(cat "$ROOT"/build/lib/libtinyllm_*.a | sha256sum)" != "$runtime_before" ]; then
  echo "skip a rerun builds nothing: the runtime library was rebuilt meanwhile (a concurrent make)"
else
  absent "check: a rerun with nothing changed links nothing" "ol: gcc"
  absent "check: a rerun with nothing changed compiles nothing" ") gcc"
fi
run "$OL" diff L7.1
expect "diff after a pass shows both sides" 0 "reference/tinyllm/modern/rmsnorm.c"
run "$OL" list
expect "list shows the lesson and the last check" 0 "L7.1" "R3" "last check: PASS"

# ---- instructor verbs, on a scratch copy of the course ------------------
R=$T/root; mkdir -p "$R"
for d in oracle build fixtures; do ln -s "$ROOT/$d" "$R/$d"; done
for d in course contracts stubs tests; do cp -r "$ROOT/$d" "$R/$d"; done
mkdir -p "$R/reference"; cp -r "$ROOT/reference/tinyllm" "$R/reference/tinyllm"
IW=$T/instructor; mkdir -p "$IW"
export OL_ROOT=$R
run "$OL" mutants L7.1 --workspace "$IW"
expect "mutants lists the lesson's mutants" 0 "s01" "w01"
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify: s01 applies and its Caught-by tests kill it" 0 "killed by its Caught-by tests" "test_eps.c:"
REF=$R/reference/tinyllm/modern/rmsnorm.c
sed 's/tl_add_scalar(ms, n->eps)/tl_add_scalar(ms, 4 * n->eps)/' "$REF" > "$T/edited.c"
if cmp -s "$T/edited.c" "$REF"; then
  fail "mutants new: could not edit the reference (it changed: update e2e.sh)"
else
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id s99 --title "eps four times too large" \
    --caught-by test_eps_inside_the_square_root --workspace "$IW"
  expect "mutants new writes the mutant and verifies it" 0 "wrote course/L7.1/mutants/s99-eps-four-times-too-large.mutant"
  grep -q '^Caught-by: test_eps_inside_the_square_root' "$R/course/L7.1/mutants/s99-eps-four-times-too-large.mutant" \
    && ok "mutants new writes the header" || fail "mutants new writes the header"
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id s99 --title "again" --caught-by x --workspace "$IW"
  expect "mutants new refuses an id in use" 2 "already has s99"
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id s98 --title "eps x4 caught by the wrong test" \
    --caught-by test_boundary_bad_eps --workspace "$IW"
  expect "mutants verify fails when Caught-by does not kill it" 1 "passes on it"
fi
# a mutant that hangs and one that crashes: Timeout, and Killed with the signal
add_mutant() { # ID TITLE LINE: LINE inserted at the top of rmsnorm_forward
  awk -v line="$3" '{ print } /^tl_tensor \*rmsnorm_forward\(.*\{$/ { print line }' "$REF" > "$T/$1.c"
  { printf 'Mutant: %s\nTitle: %s\nCaught-by: test_golden_matches_hf\n---\n' "$1" "$2"
    diff -u --label "a/reference/tinyllm/modern/rmsnorm.c" --label "b/reference/tinyllm/modern/rmsnorm.c" "$REF" "$T/$1.c"
  } > "$R/course/L7.1/mutants/$1-x.mutant"
}
add_mutant s90 "spins forever" "    for (volatile int spin = 1; spin;) {}"
add_mutant s91 "traps at once" "    __builtin_trap();"
W2=$T/ws2; mkdir -p "$W2"; cd "$W2" || exit 2
"$OL" start L7.1 > /dev/null; cp "$REF" c/tinyllm/modern/rmsnorm.c
set_tests test_one.c "$HEAD
START_TEST(test_constant_row)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 4, 0.0, false), 0);
    const float x[4] = {3, 3, 3, 3}, ones[4] = {1, 1, 1, 1};
    tl_assert_close(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(4))), tl_from_f32(ones, TL_SHAPE(4)), 1e-6, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST"
run "$OL" check L7.1 --json "$T/s9x.json"
expect "check: a hanging mutant is a Timeout, and counts as caught" 1 "s90" "Timeout"
grep -q 'signal 4 (Illegal instruction)' "$T/s9x.json" && ok "check: a crashing mutant is Killed, the signal named" \
  || fail "check: a crashing mutant is Killed, the signal named"
cd "$IW" || exit 2
rm "$R"/course/L7.1/mutants/s9[01]-x.mutant

# a lesson that needs L7.1: its code links the student's L7.1, or the reference with --ref-deps
mkdir -p "$R/course/L7.T/mutants" "$R/tests/L7.T" "$R/reference/tests/l7-t-twice"
cat > "$R/course/L7.T/lesson.json" <<'JSON'
{"id": "L7.T", "slug": "l7-t-twice", "title": "RMSNorm twice", "rung": "R3", "needs": ["L7.1"],
 "sources": ["tinyllm/modern/twice.c"], "contracts": ["tinyllm/modern/twice.h"],
 "course_tests": "tests/L7.T", "student_tests": "tests/l7-t-twice",
 "model_tests": "reference/tests/l7-t-twice", "required_pitfalls": ["s01"]}
JSON
printf '%s\n' '#include "tinyllm/modern/rmsnorm.h"' 'tl_tensor *twice_norm(const RMSNorm *n, tl_tensor *x);' \
  > "$R/contracts/tinyllm/modern/twice.h"
printf '%s\n' '#include "tinyllm/tensor.h"' '#include "tinyllm/modern/twice.h"' \
  'tl_tensor *twice_norm(const RMSNorm *n, tl_tensor *x) { (void)n; (void)x; return tl_fail("not implemented: twice_norm (L7.T)"); }' \
  > "$R/stubs/tinyllm/modern/twice.c"
printf '%s\n' '#include "tinyllm/modern/twice.h"' \
  'tl_tensor *twice_norm(const RMSNorm *n, tl_tensor *x) {' '    return rmsnorm_forward(n, rmsnorm_forward(n, x));' '}' \
  > "$R/reference/tinyllm/modern/twice.c"
TWICE_TEST="$HEAD
#include \"tinyllm/modern/twice.h\"
START_TEST(test_twice_is_rmsnorm_of_rmsnorm)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 4, 0.5, false), 0);
    const float x[4] = {1, 2, 3, 4};
    tl_tensor *once = rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(4)));
    tl_assert_close(twice_norm(&n, tl_from_f32(x, TL_SHAPE(4))), rmsnorm_forward(&n, once), 1e-6, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST"
printf '%s\n' "$TWICE_TEST" > "$R/tests/L7.T/test_twice.c"
printf '%s\n' "$TWICE_TEST" > "$R/reference/tests/l7-t-twice/test_my_twice.c"
sed 's/return rmsnorm_forward(n, rmsnorm_forward(n, x));/return rmsnorm_forward(n, x);/' \
  "$R/reference/tinyllm/modern/twice.c" > "$T/once.c"
{ printf 'Mutant: s01\nPitfall: 1\nTitle: normalised once\nCaught-by: test_twice_is_rmsnorm_of_rmsnorm\n---\n'
  diff -u --label a/reference/tinyllm/modern/twice.c --label b/reference/tinyllm/modern/twice.c \
    "$R/reference/tinyllm/modern/twice.c" "$T/once.c"; } > "$R/course/L7.T/mutants/s01-once.mutant"
W3=$T/ws3; mkdir -p "$W3"; cd "$W3" || exit 2
run "$OL" start L7.T
expect "start of a lesson with needs names what it needs" 0 "Needs L7.1" "not started"
run "$OL" tests L7.T
expect "tests refuses a lesson whose needs are not started, naming them" 2 "needs L7.1" "--ref-deps"
run "$OL" tests L7.T --ref-deps
expect "tests --ref-deps links the reference of the needed lesson" 1 "not implemented: twice_norm"
cp "$R/reference/tinyllm/modern/twice.c" c/tinyllm/modern/twice.c
"$OL" start L7.1 > /dev/null
run "$OL" tests L7.T
expect "tests links the student's own code of the needed lesson (the L7.1 stub)" 1 "rmsnorm_init(&n, 4, 0.5, 0) == -1"
cp "$REF" c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.T
expect "tests passes with the student's code of both lessons" 0 "1 passed, 0 failed"
rm -f c/tests/l7-t-twice/*.c; cp "$R"/reference/tests/l7-t-twice/*.c c/tests/l7-t-twice/
run "$OL" check L7.T
expect "check of a lesson with needs grades against the references" 0 "PASS: L7.T reaches R3"
cd "$IW" || exit 2
run "$OL" mutants verify L7.T
expect "mutants verify links the needed lessons' references" 0 "every mutant and wheat verified"
{ echo "/* a new first line moves every line down */"; cat "$REF"; } > "$T/moved.c" && mv "$T/moved.c" "$REF"
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify: a stale mutant fails loudly" 1 "stale mutant"
rm "$R/fixtures"; cp -r "$ROOT/fixtures" "$R/fixtures"
run "$OL" fixtures L7.1 --check --workspace "$IW"
expect "fixtures --check: the committed fixtures are what the oracle makes" 0 "are what the oracle makes"
ST=$R/fixtures/L7.1/rmsnorm.safetensors
python3 - "$ST" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
b[-2] ^= 0x40  # a high bit of the last float: a real difference
open(p, 'wb').write(bytes(b))
PY
run "$OL" fixtures L7.1 --check --workspace "$IW"
expect "fixtures --check reports a changed tensor" 1 "differs"
export OL_ROOT=$ROOT

echo "ol e2e: $((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
