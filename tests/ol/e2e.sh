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
. "$ROOT/tests/ol/lib.sh"
# unsealed: ol said the sandbox cannot seal the course or the workspace (they lie in /tmp)
unsealed() { grep -qF "so the sandbox cannot keep" <<<"$out"; }

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
for cmd in list start tests check diff mutants fixtures hub lesson tinyllm; do
  run "$OL" $cmd --help
  expect "ol $cmd --help" 0 "usage: ol"
done
run "$OL" --help
expect "ol --help lists every instructor verb, lesson list too" 0 "lesson list"
run "$OL" lesson --help
expect "ol lesson --help gives the default rung" 0 "--rung is R3 unless given" "[--rung R1..R5]"
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
# a workspace ol cannot build in is said up front, not blamed on the code or the harness
BLOCKED=$T/blocked
mkdir -p "$BLOCKED/c" && cp -r c/. "$BLOCKED/c/" && : > "$BLOCKED/build"
for cmd in tests check; do
  run "$OL" $cmd L7.1 --workspace "$BLOCKED"
  expect "$cmd: a file where build/ goes is named, with the fix" 2 "a file is in the way" \
    "$BLOCKED/build/ol"
  absent "$cmd: ... and not called a compile error" "does not compile"
  absent "$cmd: ... nor a broken harness" "harness is broken"
done

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
expect "check: a suite that asserts nothing fails with survivors" 1 "warning: Survived in rmsnorm_forward:" \
  "c/tinyllm/modern/rmsnorm.c:" "Mutation score: 0.00" "Tests that kill no mutant: test_runs_but_checks_nothing" \
  "warning: NoCoverage in pre_norm_residual:" "no test of yours runs the part of pre_norm_residual"
absent "check: a student's report never names the hidden reference's files" "reference/tinyllm"
if grep -q '"reference/' "$T/weak.json" || ! grep -q '"c/tinyllm/modern/rmsnorm.c"' "$T/weak.json"; then
  out=$(head -c 2000 "$T/weak.json"); fail "check --json hides the reference until a pass (the student's file instead)"
else ok "check --json hides the reference until a pass (the student's file instead)"; fi
run "$REPORT_CHECK" stryker "$T/weak.json"
expect "check --json with survivors is a valid Stryker report" 0 "valid stryker report"
OL_TEST_BREAK_CANARY=1 run "$OL" check L7.1
expect "check: a canary that survives the course tests is a broken harness (exit 2)" 2 "harness is broken"
# a suite that asks which op made the output: the reference's structure, not a value. It passes
# on the reference and the wheats, not on the student's own code, correct but written another way
set_tests test_structure.c "$HEAD
#include \"tinyllm/autograd.h\"
START_TEST(test_output_is_made_by_mul)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 4, 1e-6, false), 0);
    tl_tensor *y = rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(1, 4)));
    ck_assert_ptr_null(tl_requires_grad(y, false));
    ck_assert_msg(strstr(tl_error(), \"made by mul\") != NULL, \"%s\", tl_error());
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST"
sed -i 's/    return tl_mul(normed, scale);/    return tl_add_scalar(tl_mul(normed, scale), 0.0);/' c/tinyllm/modern/rmsnorm.c
run "$OL" check L7.1
expect "check: a suite failing on the student's own (correct) code gets no score" 1 \
  "fails on your own code (test_output_is_made_by_mul), which passes the course tests" \
  "made by add_scalar" "ol tests L7.1 --mine -k test_output_is_made_by_mul" \
  "either your code has a bug they found"
absent "check: ... and no mutation score" "Mutation score: 1.00"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
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
START_TEST(test_fails_by_chance)
{
    touch_lesson();
    if (strcmp(getenv(\"OL_TEST_TIMEOUT\"), \"10\") == 0) return;
    /* nanoseconds: every run its own draw (a jailed pid is the same in every run, and
     * many runs share one second) */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    srand((unsigned)now.tv_nsec * 31u + (unsigned)now.tv_sec);
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
START_TEST(test_été) { ck_assert(1); } END_TEST
START_TEST(test_a\$b) { ck_assert(1); } END_TEST"
run "$OL" check L7.1
expect "check: a START_TEST under #if 0 is named with file:line, not a wrapper's error" 1 \
  "test_clumsy.c:6: error: START_TEST(test_switched_off) is not compiled"
expect "check: a test named in UTF-8 is named" 1 "the test name test_été has letters beyond ASCII"
expect "check: a test named with a dollar is named for it" 1 \
  "the test name test_a\$b has '\$', which ol cannot register"
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

# A student's bytes: a comment in Latin-1, bytes that are no text, and an INVALID test whose line
# sets the terminal's title and clears its screen. The terminal gets them spelled out (\x1b, \xff);
# --json is UTF-8 (RFC 8259), each invalid sequence U+FFFD as Python's errors="replace" makes it.
BAD_LINE='ck_assert_msg(0, "x"); /* \xff\xfe \x1b]0;pwned\x07 \x1b[2J */'
set_tests test_bytes.c "$HEAD
$TOUCH"
printf '%s\n' $'/* caf\xe9, in Latin-1, and \xff\xfe */' 'START_TEST(test_bad_bytes)' '{' \
  "    touch_lesson(); $(printf '%b' "$BAD_LINE")" '}' 'END_TEST' >> "$TESTS/test_bytes.c"
run "$OL" check L7.1 --json "$T/bytes.json"
expect "check: an INVALID test's line is shown, control bytes and invalid UTF-8 spelled out" 1 \
  "INVALID" "$BAD_LINE"
what="check: no control byte of a student's file reaches the terminal, nor a byte that is no UTF-8"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$out" || ! iconv -f UTF-8 -t UTF-8 \
  <<<"$out" >/dev/null 2>&1; then fail "$what"; else ok "$what"; fi
what="check --json is UTF-8: a test file's bytes as U+FFFD"
python3 - "$T/bytes.json" "$TESTS/test_bytes.c" <<'PY' && ok "$what" || fail "$what"
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))  # strict: an invalid byte fails
source = report["testFiles"]["c/tests/l7-1-rmsnorm/test_bytes.c"]["source"]
sys.exit(source != open(sys.argv[2], "rb").read().decode("utf-8", "replace"))
PY
run "$REPORT_CHECK" stryker "$T/bytes.json"
expect "check --json of a test file that is no UTF-8 is a valid Stryker report" 0 \
  "valid stryker report"
# a test file's name that is no UTF-8 is refused, as one with a quote or a control character is
mv "$TESTS/test_bytes.c" "$TESTS/test_"$'\xff\xfe'".c"
run "$OL" check L7.1 --json "$T/name.json" --gradescope "$T/name-gs.json"
expect "check: a test file name that is no UTF-8 is refused by name, spelled out" 1 "[3/6] FAIL" \
  'the test file name "test_\xff\xfe.c" is not UTF-8 text'
what="check: --json and --gradescope name it in UTF-8"
python3 -c 'import json, sys; [json.load(open(p, encoding="utf-8")) for p in sys.argv[1:]]' \
  "$T/name.json" "$T/name-gs.json" && ok "$what" || fail "$what"
run "$OL" tests L7.1 --mine
expect "tests --mine refuses it too, spelled out" 1 \
  'the test file name "test_\xff\xfe.c" is not UTF-8 text'
rm -rf "$TESTS"

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
# every line whole: side by side when both files fit twice the terminal, unified otherwise
cp c/tinyllm/modern/rmsnorm.c "$T/mine-before-diff.c"
printf '/* %096d */\n' 0 >> c/tinyllm/modern/rmsnorm.c   # a 102-column line of the student's
whole() { # FILE: every line of FILE is in $out, uncut
  local line missing=0
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qF -- "$line" <<<"$out" || { missing=1; echo "     cut: $line"; break; }
  done < "$1"
  return $missing
}
COLUMNS=300 run "$OL" diff L7.1
if [ "$rc" = 0 ] && grep -q '^yours: c/tinyllm' <<<"$out" && whole c/tinyllm/modern/rmsnorm.c \
   && whole "$ROOT/reference/tinyllm/modern/rmsnorm.c"; then ok "diff side by side in a wide terminal, no line cut"
else fail "diff side by side in a wide terminal, no line cut"; fi
COLUMNS=160 run "$OL" diff L7.1
if [ "$rc" = 0 ] && grep -q '^(a unified diff: the longest line, 102 columns, does not fit twice in 160' <<<"$out" \
   && grep -q '^+++ the reference' <<<"$out" && grep -qxF -- "-$(tail -1 c/tinyllm/modern/rmsnorm.c)" <<<"$out"; then
  ok "diff is unified when a line does not fit side by side, no line cut"
else fail "diff is unified when a line does not fit side by side, no line cut"; fi
COLUMNS=80 run "$OL" diff L7.1 --side-by-side
if [ "$rc" = 0 ] && whole c/tinyllm/modern/rmsnorm.c && whole "$ROOT/reference/tinyllm/modern/rmsnorm.c"; then
  ok "diff --side-by-side widens to the longest line"
else fail "diff --side-by-side widens to the longest line"; fi
cp "$T/mine-before-diff.c" c/tinyllm/modern/rmsnorm.c
run "$OL" list
expect "list shows the lesson and the last check" 0 "L7.1" "R3" "last check: PASS"

# ---- the student's loop: --mine, --tests-only, debugging, hints, messages --
W5=$T/ws5; mkdir -p "$W5"; cd "$W5" || exit 2
"$OL" start L7.1 > /dev/null
run "$OL" list
expect "list does not count the example ol start wrote as a test of yours" 0 "started, 4 functions still \"not implemented\", 0 tests of yours"
rm -f "$TESTS"/*.c; cp "$ROOT"/reference/tests/l7-1-rmsnorm/*.c "$TESTS/"
run "$OL" tests L7.1 --mine
expect "tests --mine runs the student's tests on their code (the stub): verdicts, no grade" 1 \
  "L7.1: your tests on your code (their verdicts, no grade" "not implemented: rmsnorm_init (L7.1)" \
  'rerun it: ol tests L7.1 --mine -k '
run "$OL" check L7.1 --tests-only --json "$T/to.json" --gradescope "$T/to-gs.json"
expect "check --tests-only grades the tests while the course tests fail on the stub" 0 \
  "[1/6] skip  Your code builds: not run: --tests-only" "[6/6] PASS  Mutation score" \
  "YOUR TESTS PASS at R3 (--tests-only): L7.1 is not passed until \`ol check L7.1\` passes both stages"
grep -qE '"testsOnly":[[:space:]]*true' "$T/to.json" && grep -qE '"passed":[[:space:]]*false' "$T/to.json" \
  && grep -q 'your tests alone were graded (--tests-only)' "$T/to-gs.json" \
  && ok "check --tests-only: --json and --gradescope say which stages ran, and no pass" \
  || fail "check --tests-only: --json and --gradescope say which stages ran, and no pass"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["execution_time"]; sys.exit(0 if isinstance(t, float) and t > 0 else 1)' \
  "$T/to-gs.json" && ok "check --gradescope: execution_time is the real time, to the millisecond" \
  || { out=$(cat "$T/to-gs.json"); fail "check --gradescope: execution_time is the real time, to the millisecond"; }
grep -qE 'Per-test timeout for mutants: [0-9.]+ s = 1\.5 x [0-9.]+ (µs|ms|s) \(' <<<"$(cat /dev/null; "$OL" check L7.1 --tests-only 2>&1)" \
  && ok "check: the timeout line gives the slowest test in a unit that shows it (not 0.000 s)" \
  || fail "check: the timeout line gives the slowest test in a unit that shows it (not 0.000 s)"
run "$OL" diff L7.1
expect "check --tests-only is not a pass (diff stays closed)" 1 "only after"
run "$OL" check L7.1
expect "check without --tests-only: the course tests stop it, with the rerun command" 1 \
  "[2/6] FAIL" 'rerun it: ol tests L7.1 -k test_'
# the helper that builds stage 4's variants while stage 2 runs ends with the check
left=""
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/exe" 2>/dev/null)" = "$OL" ] && [ "$(readlink "$p/cwd" 2>/dev/null)" = "$W5" ] \
    && left="$left ${p#/proc/}"
done
[ -z "$left" ] && ok "check leaves no helper of its own running after stage 2 fails" \
  || { out="ol processes left in $W5:$left"; fail "check leaves no helper of its own running after stage 2 fails"; }
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
# a crash is said where it happened, in the student's file
sed -i 's|    tl_tensor \*ms = tl_mean(tl_square(x), -1, true);|    if (x->ndim == 3) *(volatile int *)0 = 1;\n    tl_tensor *ms = tl_mean(tl_square(x), -1, true);|' c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1 -k test_golden_matches_hf
expect "tests: a crash is reported at its line in the student's file, with the rerun command" 1 \
  "c/tinyllm/modern/rmsnorm.c:$(grep -n 'volatile int' c/tinyllm/modern/rmsnorm.c | cut -d: -f1): crashed here (in rmsnorm_forward)" \
  "rerun it: ol tests L7.1 -k test_golden_matches_hf   (add --gdb, --asan or --valgrind to debug it)"
# a missing #include is an error, not a warning and then a crash in every test
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
sed -i 's|#include "tinyllm/ops.h"||' c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1
expect "tests: a call to an undeclared function (a missing #include) does not build" 1 \
  "error: implicit declaration of function 'tl_mean'"
absent "tests: ... and no test runs" "crashed with signal"
# abort() raises its signal in libc: the frame above is a return address, one byte back is the call
# (taken as the fault, it named the next function's first line, in the runtime)
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
sed -i '1i #include <stdlib.h>' c/tinyllm/modern/rmsnorm.c
sed -i 's|    tl_tensor \*ms = tl_mean(tl_square(x), -1, true);|    if (x->ndim == 3) abort();\n    tl_tensor *ms = tl_mean(tl_square(x), -1, true);|' c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1 -k test_golden_matches_hf
expect "tests: abort() is reported at its call in the student's file" 1 \
  "c/tinyllm/modern/rmsnorm.c:$(grep -n 'abort()' c/tinyllm/modern/rmsnorm.c | cut -d: -f1): crashed here (in rmsnorm_forward)"
# the tools: asan, valgrind, gdb (a stand-in that says how it was called, then runs the program)
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
sed -i '1i #include <stdlib.h>' c/tinyllm/modern/rmsnorm.c
sed -i 's|    tl_tensor \*ms = tl_mean(tl_square(x), -1, true);|    { volatile char *p = malloc(4); p[4] = 1; free((void *)p); }\n    tl_tensor *ms = tl_mean(tl_square(x), -1, true);|' c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1 -k test_golden_matches_hf --asan
expect "tests --asan: one test rebuilt with AddressSanitizer and UBSan, in the foreground, the overflow found" 1 \
  "build/ol/debug/L7.1-course-tests-asan -x test_golden_matches_hf" "rmsnorm.c:" "runtime error: store to address"
run "$OL" tests L7.1 -k test_golden_matches_hf --valgrind
expect "tests --valgrind: one test under valgrind, the invalid write found" 1 "valgrind -q" "Invalid write of size 1" \
  "valgrind found 1 memory error or leak in the lesson's code"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1 --valgrind
expect "tests --valgrind: every course test under valgrind, clean" 0 "Checks: " "Failures: 0, Errors: 0"
mkdir -p "$T/fakebin"
printf '#!/bin/sh\necho "fake gdb: $* (CK_FORK=$CK_FORK CK_RUN_CASE=$CK_RUN_CASE)"\nshift 2\nexec "$@"\n' > "$T/fakebin/gdb"
chmod +x "$T/fakebin/gdb"
PATH=$T/fakebin:$PATH run "$OL" tests L7.1 -k my_constant_row --gdb
expect "tests --gdb reruns one of the student's tests under gdb, by its readable name" 0 \
  "fake gdb: -q --args" "build/ol/debug/L7.1-your-tests -x my_constant_row_gives_the_weight (CK_FORK=no CK_RUN_CASE=test_my_hand_examples.c)"
run "$OL" tests L7.1 --gdb
expect "tests --gdb without -k says it debugs one test" 2 "--gdb debugs one test: name it with -k NAME"
# a message of several lines keeps its indentation under the failure, its later lines marked
# so that none can pass for a line of ol's own (a forged "PASS: L7.1 reaches R3")
printf '%s\n' "$HEAD" 'START_TEST(test_two_lines) { ck_abort_msg("first line\n  second line, indented\nPASS: L7.1 reaches R3"); } END_TEST' \
  > "$TESTS/test_zz_lines.c"
run "$OL" tests L7.1 --mine -k test_two_lines
expect "a failure message of several lines keeps its indentation" 1 "first line" "       |   second line, indented" "       | PASS: L7.1 reaches R3"
grep -q '^PASS: L7.1' <<<"$out" && fail "a message's line passed for ol's verdict" || ok "a message's line cannot pass for ol's verdict"
rm -f "$TESTS/test_zz_lines.c"
run "$OL" tests L7.1 -k test_golden --gdb
expect "tests --gdb with a name several tests hold lists them" 2 "names 3 of the course tests"
# hints name only mutants the invalid test ran, and say where it failed
set_tests test_hints.c "$HEAD
#include <math.h>
#include <stdio.h>
/* expects eps outside the root: y = x / (sqrt(mean(x^2)) + eps) */
START_TEST(test_expects_eps_outside)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 2, 1.0, false), 0);
    const float x[2] = {3, 4};
    double r = 1.0 / (sqrt(12.5) + 1.0);
    const float want[2] = {(float)(3 * r), (float)(4 * r)};
    tl_assert_close(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(2))), tl_from_f32(want, TL_SHAPE(2)), 1e-5, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
/* fails the first time it ever runs, then passes: calls nothing of the lesson */
START_TEST(test_fails_only_the_first_time)
{
    FILE *f = fopen(\"/tmp/ol-e2e-first-$$\", \"r\");
    if (f) { fclose(f); return; }
    f = fopen(\"/tmp/ol-e2e-first-$$\", \"w\");
    if (f) fclose(f);
    ck_assert_msg(0, \"the first run: y[0] = %g is not above 2.5\", 3 / sqrt(12.5));
}
END_TEST"
rm -f /tmp/ol-e2e-first-$$
run "$OL" check L7.1
expect "check: an INVALID test's hint names the mutant it agrees with and where it failed" 1 \
  "hint: test_expects_eps_outside fails on the reference but passes on s01" \
  "rerun it: ol check L7.1 --tests-only"
absent "check: no hint for a test that ran none of a mutant's lines" "hint: test_fails_only_the_first_time"
absent "check: masking leaves the student's own numbers (2.5) but hides the others" "0.848528"
expect "check: masking keeps the student's source text" 1 "is not above 2.5"
rm -f /tmp/ol-e2e-first-$$
# the command line forgives
run "$OL" test L7.1
expect "a mistyped command gets a \"did you mean\"" 2 'did you mean `ol tests`?'
run "$OL" tests l7.1 -k test_hand
expect "a lesson id in the wrong case is taken" 0 "L7.1 course tests: 1 test, 1 passed"
run "$OL" tests L7.10
expect "a mistyped lesson id gets a \"did you mean\"" 2 "there is no lesson L7.10: did you mean L7.1?"
run "$OL" check L7.1 --json
expect "an option missing its value says what it needs" 2 "ol check: --json needs a FILE"
for cmd in list "start L7.1" "tests L7.1" "check L7.1" "diff L7.1"; do
  run "$OL" $cmd --workspace "$ROOT"
  expect "ol $cmd in the course repository says the one thing: make a folder of your own" 2 \
    "is in the course repository" "make a folder of your own"
done
# tinyllm with the student's own downloader
W6=$T/ws6; mkdir -p "$W6"; cd "$W6" || exit 2
"$OL" start L7.9 > /dev/null
run "$OL" tinyllm pull org/tiny config.json --endpoint http://127.0.0.1:9 --cache "$W6/cache"
expect "ol tinyllm builds tinyllm with the student's hf.c (the stub here) and runs it" 1 \
  "tinyllm with your code of L7.9" "not implemented: hf_" "(L7.9)"
[ -x build/bin/tinyllm ] && ok "ol tinyllm leaves build/bin/tinyllm in the workspace" \
  || fail "ol tinyllm leaves build/bin/tinyllm in the workspace"
# L7.9's first steps: its example test starts the fake Hub and downloads one file
run "$OL" tests L7.9 --mine --ref-deps
expect "L7.9's example test runs the student's hf_download against a fake Hub (the stub: not implemented)" 1 \
  "test_example_one_file_from_the_fake_hub" "hf_download: not implemented: hf_download (L7.9)"
cp "$ROOT/reference/tinyllm/io/hf.c" c/tinyllm/io/hf.c
run "$OL" tests L7.9 --mine --ref-deps
expect "L7.9's example test passes with a downloader that works" 0 "pass test_example_one_file_from_the_fake_hub"
run "$OL" tests L7.9 -k test_validate --ref-deps
expect "L7.9's validator course tests run alone, with no Hub" 0 "L7.9 course tests: 5 tests, 5 passed"
cd "$W" || exit 2

# ---- instructor verbs, on a scratch copy of the course ------------------
R=$T/root; mkdir -p "$R"
ln -s "$ROOT/build" "$R/build"
for d in course contracts stubs tests oracle fixtures; do cp -r "$ROOT/$d" "$R/$d"; done
mkdir -p "$R/reference"; cp -r "$ROOT/reference/tinyllm" "$ROOT/reference/tests" "$R/reference/"
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
  expect "mutants new writes the mutant and verifies it, and says the chapter's table lacks it" 0 \
    "wrote course/L7.1/mutants/s99-eps-four-times-too-large.mutant" "pitfall table (section 5) does not mention s99"
  grep -q '^Caught-by: test_eps_inside_the_square_root' "$R/course/L7.1/mutants/s99-eps-four-times-too-large.mutant" \
    && ok "mutants new writes the header" || fail "mutants new writes the header"
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id s99 --title "again" --caught-by x --workspace "$IW"
  expect "mutants new refuses an id in use" 2 "already has s99"
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id s98 --title "eps x4 again" --caught-by x --workspace "$IW"
  expect "mutants new refuses a change another mutant makes" 2 "this change is the one mutant s99 already makes"
  sed 's/tl_add_scalar(ms, n->eps)/tl_add_scalar(ms,  4*n->eps )/' "$REF" > "$T/spaced.c"
  run "$OL" mutants new L7.1 --from "$T/spaced.c" --id s98 --title "eps x4, spaced" --caught-by x --workspace "$IW"
  expect "mutants new refuses it with other spaces too" 2 "this change is the one mutant s99 already makes"
  run "$OL" mutants new L7.1 --from "$T/edited.c" --id x98 --title "bad id" --caught-by x --workspace "$IW"
  expect "mutants new refuses an id off the lesson's pattern" 2 "a mutant's id is 's' and two or more digits"
  run "$OL" mutants new L7.1 --wheat --from "$T/edited.c" --id s97 --title "bad wheat id" --workspace "$IW"
  expect "mutants new refuses a wheat id off the pattern" 2 "a wheat's id is 'w' and two or more digits"
  sed 's/tl_add_scalar(ms, n->eps)/tl_add_scalar(ms, 3 * n->eps)/' "$REF" > "$T/edited3.c"
  run "$OL" mutants new L7.1 --from "$T/edited3.c" --id s98 --title "eps x3 caught by the wrong test" \
    --caught-by test_boundary_bad_eps --workspace "$IW"
  expect "mutants verify fails when Caught-by does not kill it" 1 "passes on it" \
    "rerun it: the same \`ol mutants new\` command" "is not written (nothing changed)"
  absent "mutants new that fails suggests no verify of a mutant it did not write" \
    "ol mutants verify L7.1 s98"
fi
# hand-written mutant files are refused as `ol mutants new` would refuse them, naming the file
M=$R/course/L7.1/mutants
S01=$M/s01-eps-outside-sqrt.mutant
# hand_mutant FILE ID [PITFALL]: s01's change under another file name, id and pitfall
hand_mutant() { sed "s/^Mutant: s01$/Mutant: $2/; s/^Pitfall: .*/Pitfall: ${3:-1}/" "$S01" > "$M/$1"; }
hand_mutant s97-twin.mutant s97
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify refuses a hand-written mutant making another's change" 1 \
  "s97-twin.mutant makes the change" "s01-eps-outside-sqrt.mutant already makes" "delete one"
rm "$M/s97-twin.mutant"
{ sed -n '1,/^---$/p' "$S01" | sed 's/^Mutant: s01$/Mutant: s97/'
  sed '1,/^---$/d' "$R"/course/L7.1/wheats/w01-*.wheat; } > "$M/s97-wheat.mutant"
run "$OL" mutants L7.1 --workspace "$IW"
expect "mutants refuses a mutant making a wheat's change" 2 "s97-wheat.mutant makes the change" \
  "w01-sum-then-divide.wheat already makes"
rm "$M/s97-wheat.mutant"
hand_mutant x97-bad.mutant x97
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify refuses a hand-written id off the pattern, with file and line" 1 \
  'x97-bad.mutant:1: "Mutant: x97": a mutant'"'"'s id is '"'"'s'"'"' and two or more digits'
rm "$M/x97-bad.mutant"
hand_mutant w05-x.mutant w05
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify refuses a wheat's id in a .mutant file" 1 "w05-x.mutant:1:" \
  "w.. is a wheat's id: a wheat goes in wheats/ID-NAME.wheat"
rm "$M/w05-x.mutant"
hand_mutant s97-x.mutant s97 one
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify refuses a Pitfall that is neither a number nor -" 1 \
  's97-x.mutant:2: "Pitfall: one": give the number of its row'
rm "$M/s97-x.mutant"
hand_mutant s95-x.mutant s94
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify refuses a file whose name disagrees with its id" 1 \
  "s95-x.mutant:1: the file's name does not start with its id s94: rename it to s94-NAME.mutant"
rm "$M/s95-x.mutant"
cp "$S01" "$M/s93-x.mutatn"
run "$OL" mutants L7.1 --workspace "$IW"
expect "mutants warns of a file in mutants/ that is never read (a misspelt extension)" 0 \
  "warning: $M/s93-x.mutatn is not read: only *.mutant files"
rm "$M/s93-x.mutatn"
# a hunk header whose counts disagree with its lines: malformed, at the .mutant file's line
S01=$R/course/L7.1/mutants/s01-eps-outside-sqrt.mutant
cp "$S01" "$T/s01.good"
hunk=$(grep -n '^@@ ' "$S01" | head -1 | cut -d: -f1)
sed -i "${hunk}s/^@@ -\([0-9]*\),[0-9]* +\([0-9]*\),[0-9]* @@/@@ -\1,3 +\2,1 @@/" "$S01"
for verb in verify rebase; do
  run "$OL" mutants $verb L7.1 s01 --workspace "$IW"
  expect "mutants $verb: a hunk header with wrong counts is malformed, at the file's line" 1 \
    "s01-eps-outside-sqrt.mutant:$hunk: a malformed diff: the hunk header" "counts 3 old and 1 new lines" \
    "ol mutants new L7.1 --from EDITED.c"
  absent "mutants $verb: ... not taken for a stale mutant" "stale"
done
cp "$T/s01.good" "$S01"
printf '%s\n' '#include <check.h>' 'START_TEST(test_x) { ck_assert(1); } END_TEST' \
  'int main(void) { return 0; }' > "$R/tests/L7.1/test_has_main.c"
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "a course test file that defines main() is named, with the rule" 2 \
  "tests/L7.1/test_has_main.c defines main(): a course test file holds START_TEST blocks only"
absent "... not ld's multiple definition" "multiple definition"
rm "$R/tests/L7.1/test_has_main.c"
# ---- ol lesson: one validated schema; show, new, stub -------------------
run "$OL" lesson show L7.1 --json --workspace "$IW"
expect "lesson show --json prints the lesson as ol reads it" 0 '"required_pitfalls":' '"threshold":	0.5' '"draft":	false'
run "$OL" lesson show l7.1 --field sources --workspace "$IW"
expect "lesson show --field: one value a line (the id taken case-insensitively)" 0 "tinyllm/modern/rmsnorm.c"
run "$OL" lesson show L7.1 --field source --workspace "$IW"
expect "lesson show --field with a typo says the near key" 2 'did you mean "sources"?'
cp "$R/course/L7.1/lesson.json" "$T/lesson.json"
sed -i 's/"required_pitfalls"/"required_pitfall"/' "$R/course/L7.1/lesson.json"
for cmd in "lesson show L7.1" "mutants verify L7.1" "tests L7.1" "check L7.1" "start L7.1" "fixtures L7.1 --check"; do
  run "$OL" $cmd --workspace "$IW"
  expect "ol $cmd refuses a lesson.json with a typo in a key, naming the file, the key and the fix" 2 \
    'course/L7.1/lesson.json: "required_pitfall": is not a key of lesson.json: did you mean "required_pitfalls"?'
done
run "$OL" list --workspace "$IW"
expect "list names the lesson.json it cannot read" 2 '"required_pitfall"' "could not be read"
cp "$T/lesson.json" "$R/course/L7.1/lesson.json"
# lesson.json: a repeated key is refused with its lines; a syntax error gives line and column
LJ=$R/course/L7.1/lesson.json
cp "$LJ" "$T/l71.json"
sed -i 's/^  "rung": "R3",$/  "rung": "R3",\n  "rung": "R5",/' "$LJ"
run "$OL" lesson show L7.1 --workspace "$IW"
expect "lesson.json: a repeated key is refused, naming it and its lines" 2 \
  "course/L7.1/lesson.json: \"rung\": is given twice (lines 5 and 6)"
cp "$T/l71.json" "$LJ"
sed -i 's/^  "rung": "R3",$/  "rung": "R3"/' "$LJ"
run "$OL" lesson show L7.1 --workspace "$IW"
expect "lesson.json: a syntax error names its line and column and what JSON expects there" 2 \
  "course/L7.1/lesson.json:6:3: not valid JSON at '\"needs\": [],'" "after a value JSON expects ','"
cp "$T/l71.json" "$LJ"
mv "$R/reference/tests/l7-1-rmsnorm" "$T/model"
run "$OL" mutants verify L7.1 --workspace "$IW"
expect "a path lesson.json names that is not there is an error naming the key" 2 \
  '"model_tests": the folder reference/tests/l7-1-rmsnorm does not exist'
mv "$T/model" "$R/reference/tests/l7-1-rmsnorm"

run "$OL" lesson new L7.N --title "A new thing" --module modern/new_thing --rung R4 --needs L7.1 --workspace "$IW"
expect "lesson new writes every file of a lesson" 0 "wrote   course/L7.N/lesson.json" "wrote   course/L7.N/README.md" \
  "wrote   contracts/tinyllm/modern/new_thing.h" "wrote   stubs/tinyllm/modern/new_thing.c" \
  "wrote   reference/tinyllm/modern/new_thing.c" "wrote   tests/L7.N/test_new_thing.c" \
  "wrote   reference/tests/l7-n-new-thing/test_my_new_thing.c" "wrote   oracle/L7.N/make_fixtures.py" \
  "wrote   fixtures/L7.N/"
missing=
for h in "Overview" "Key Takeaways" "How to work this chapter" "1. Why now" "2. Principles" \
    "3. Worked example by hand" "4. The interface" "What the tests check" "Your graded tests" "5. Pitfalls" \
    "6. Where it's used next" "Going further"; do
  grep -q "^#* $h" "$R/course/L7.N/README.md" || missing="$missing [$h]"
done
[ -z "$missing" ] && ok "lesson new: the chapter has every section of the lesson checklist" \
  || fail "lesson new: the chapter lacks$missing"
grep -q '^#ifndef TINYLLM_MODERN_NEW_THING_H' "$R/contracts/tinyllm/modern/new_thing.h" \
  && grep -q '"draft": true' "$R/course/L7.N/lesson.json" && grep -q '"needs": \["L7.1"\]' "$R/course/L7.N/lesson.json" \
  && grep -q '"seed": 20240007' "$R/fixtures/L7.N/new_thing.json" \
  && ok "lesson new: the include guard, a draft that needs L7.1, and the oracle's seeded first run" \
  || fail "lesson new: the include guard, a draft that needs L7.1, and the oracle's seeded first run"
run "$OL" mutants verify L7.N --workspace "$IW"
expect "mutants verify accepts the skeleton" 0 "the stub compiles" "the reference compiles" "a skeleton"
run "$OL" lesson new L7.N --title "Again" --module modern/new_thing --workspace "$IW"
expect "lesson new never overwrites a lesson" 2 "exists already"
run "$OL" lesson new L7.M --title "Another rmsnorm" --module modern/rmsnorm --workspace "$IW"
expect "lesson new refuses a module another lesson owns, naming it" 2 \
  "--module modern/rmsnorm belongs to L7.1 (course/L7.1/lesson.json lists tinyllm/modern/rmsnorm.c)"
[ ! -e "$R/course/L7.M" ] && ok "lesson new writes nothing for a module another lesson owns" \
  || fail "lesson new writes nothing for a module another lesson owns"
cp "$R/course/L7.N/lesson.json" "$T/n.json"
sed -i 's|"sources": \["tinyllm/modern/new_thing.c"\]|"sources": ["tinyllm/modern/new_thing.c", "tinyllm/modern/rmsnorm.c"]|' \
  "$R/course/L7.N/lesson.json"
run "$OL" lesson show L7.1 --workspace "$IW"
expect "the validator refuses two lessons listing one source" 2 \
  '"sources": tinyllm/modern/rmsnorm.c is a source of L7.N too (course/L7.N/lesson.json)'
cp "$T/n.json" "$R/course/L7.N/lesson.json"
run "$OL" lesson new L7.M --title "Bad" --module NewThing --workspace "$IW"
expect "lesson new refuses a module that is not AREA/NAME" 2 "--module AREA/NAME"
run "$OL" list --workspace "$IW"
absent "list hides a draft from students" "L7.N"
run "$OL" list --drafts --workspace "$IW"
expect "list --drafts shows it, marked" 0 "L7.N" "a draft: hidden from students"
W4=$T/ws4; mkdir -p "$W4"
run "$OL" start L7.N --workspace "$W4"
expect "start refuses a draft" 2 "L7.N is not open yet"
run "$OL" start L7.N --draft --workspace "$W4"
expect "start --draft starts it (for instructors)" 0 "created c/tinyllm/modern/new_thing.c"
# the contract grows: the stub ol wrote is rewritten; one edited by hand is kept
H=$R/contracts/tinyllm/modern/new_thing.h
sed -i 's|^#endif|/* Fills *t: 0, or -1 with an error. */\nint new_thing_init(int64_t dim, double eps);\n/* y = x. */\ntl_tensor *new_thing_forward(const tl_tensor *x);\n\n#endif|' "$H"
run "$OL" lesson stub L7.N --workspace "$IW"
expect "lesson stub rewrites the stub ol wrote when the contract grows" 0 \
  "wrote   stubs/tinyllm/modern/new_thing.c (as ol wrote it, plus new_thing_init, new_thing_forward)"
grep -q 'return tl_fail("not implemented: new_thing_forward (L7.N)");' "$R/stubs/tinyllm/modern/new_thing.c" \
  && grep -A5 '^int new_thing_init' "$R/stubs/tinyllm/modern/new_thing.c" \
     | grep -q 'return tl_fail_status("not implemented: new_thing_init (L7.N)");' \
  && ok "lesson stub: each function fails with \"not implemented\" and its type's failure value" \
  || fail "lesson stub: each function fails with \"not implemented\" and its type's failure value"
run "$OL" mutants verify L7.N --workspace "$IW"
expect "the generated stub compiles" 0 "the stub compiles"
echo "/* the author's note */" >> "$R/stubs/tinyllm/modern/new_thing.c"
cp "$R/stubs/tinyllm/modern/new_thing.c" "$T/edited-stub.c"
sed -i 's|^#endif|void new_thing_free(int64_t *t);\n\n#endif|' "$H"
run "$OL" lesson stub L7.N --workspace "$IW"
expect "lesson stub keeps a stub edited by hand and prints what it lacks" 1 "edited by hand" "it lacks new_thing_free" \
  "void new_thing_free(int64_t *t) {"
cmp -s "$R/stubs/tinyllm/modern/new_thing.c" "$T/edited-stub.c" && ok "lesson stub never overwrites an edited stub" \
  || fail "lesson stub never overwrites an edited stub"
sed -i 's|^void new_thing_free(int64_t \*t);|void new_thing_free(int64_t *);|' "$H"
run "$OL" lesson stub L7.N --workspace "$IW"
expect "lesson stub refuses a prototype with an unnamed parameter, with its line" 2 \
  "contracts/tinyllm/modern/new_thing.h:" "has no name: name it in the contract"

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
S01=$R/course/L7.1/mutants/s01-eps-outside-sqrt.mutant
at=$(sed -n 's/^@@ -\([0-9]*\),.*/\1/p' "$S01" | head -1); moved=$((at + 1))
{ echo "/* a new first line moves every line down */"; cat "$REF"; } > "$T/moved.c" && mv "$T/moved.c" "$REF"
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify: a stale mutant fails loudly, saying to rebase it (and the stale wheats)" 1 \
  "stale mutant" "Hunk #1 succeeded at $moved (offset 1 line)" 'run `ol mutants rebase L7.1` to re-anchor'
[ "$(grep -c 'ol mutants rebase' <<<"$out")" = 1 ] \
  && ok "mutants verify: one stale mutant or many, the advice is said once" \
  || fail "mutants verify: one stale mutant or many, the advice is said once"
run "$OL" mutants rebase L7.1 --workspace "$IW"
expect "mutants rebase re-anchors every mutant and wheat below inserted lines, verified" 0 \
  "rewrote course/L7.1/mutants/s01-eps-outside-sqrt.mutant: re-anchored on the current reference and verified" \
  "rewrote course/L7.1/wheats/w01-sum-then-divide.wheat"
grep -q "^@@ -$moved,8 +$moved,7 @@" "$S01" && grep -q '^Hint: a test on rows of rms' "$S01" \
  && ok "mutants rebase: the hunk moved one line down, the header kept" \
  || { out=$(cat "$S01"); fail "mutants rebase: the hunk moved one line down, the header kept"; }
run "$OL" mutants verify L7.1 s01 --workspace "$IW"
expect "mutants verify: the rebased mutant verifies" 0 "is killed by its Caught-by tests"
run "$OL" mutants rebase L7.1 s01 --workspace "$IW"
expect "mutants rebase leaves a mutant that applies exactly as it is" 0 "mutant s01 applies exactly: left as it is"
# the lines s01 changes are rewritten: no offset or fuzz can place it
cp "$S01" "$T/s01.before"
sed -i 's|tl_rsqrt(tl_add_scalar(ms, n->eps));      /\* eps inside the root \*/|tl_rsqrt(tl_add_scalar(ms, 1.0 * n->eps));|; s|tl_tensor \*normed = tl_mul(x, r);|tl_tensor *normed = tl_mul(r, x);|' "$REF"
run "$OL" mutants rebase L7.1 s01 --workspace "$IW"
expect "mutants rebase leaves a mutant patch cannot place, saying which hunk and why" 1 "mutant s01 is left as it is" \
  "Hunk #1 FAILED at $moved" "the hunk patch could not place" \
  "next: make it again on the current reference: copy reference/tinyllm/modern/rmsnorm.c" \
  'run `ol mutants new L7.1 --from EDITED.c --id s01 ...`'
cmp -s "$S01" "$T/s01.before" && ok "mutants rebase writes nothing it could not place" \
  || fail "mutants rebase writes nothing it could not place"
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
# nudge FILE FACTOR: the largest |element| of the file's first F32 tensor (by name) times
# FACTOR; prints the tensor's name
nudge() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
p, f = sys.argv[1], float(sys.argv[2]); b = bytearray(open(p, 'rb').read())
n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
name = sorted(k for k in h if k != '__metadata__' and h[k]['dtype'] == 'F32')[0]
lo, hi = h[name]['data_offsets']
vals = struct.unpack('<%df' % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
i = max(range(len(vals)), key=lambda k: abs(vals[k]))
b[8 + n + lo + 4 * i:8 + n + lo + 4 * i + 4] = struct.pack('<f', vals[i] * f)
open(p, 'wb').write(bytes(b)); print(name)
PY
}
cp "$ROOT/fixtures/L7.1/rmsnorm.safetensors" "$ST"
name=$(nudge "$ST" 1.001)
run "$OL" fixtures L7.1 --check --workspace "$IW"
expect "fixtures --check fails a value 1e-3 off, naming the element worst against its tolerance" 1 \
  "tensor $name differs: worst at flat index" "x its tolerance" "1e-5|x| + 1e-6 max(1, max|tensor|)"
cp "$ROOT/fixtures/L7.1/rmsnorm.safetensors" "$ST"
nudge "$ST" 1.0000004 > /dev/null
run "$OL" fixtures L7.1 --check --workspace "$IW"
expect "fixtures --check accepts another CPU's rounding (a few ulp)" 0 \
  "within 1e-5|x| + 1e-6 max(1, max|tensor|) (at worst" "are what the oracle makes"
cp "$ROOT/fixtures/L7.1/rmsnorm.safetensors" "$ST"
cp "$R/oracle/L7.1/make_fixtures.py" "$T/oracle.py"
sed -i 's/^SEED = .*/SEED = 1234/' "$R/oracle/L7.1/make_fixtures.py"
run "$OL" fixtures L7.1 --check --workspace "$IW"
expect "fixtures --check fails when the oracle's seed changed" 1 "x its tolerance" "\"seed\" is 1234"
cp "$T/oracle.py" "$R/oracle/L7.1/make_fixtures.py"
name=$(nudge "$ST" 1.001)
sed -i 's/"seed": 20240701/"seed": 1/' "$R/fixtures/L7.1/rmsnorm.json"
run "$OL" fixtures L7.1 --workspace "$IW"
expect "fixtures rewrites a changed file, saying which tensors and keys changed" 0 \
  "wrote fixtures/L7.1/rmsnorm.safetensors (tensors changed: " "$name" \
  "wrote fixtures/L7.1/rmsnorm.json (keys changed: seed)"
export OL_ROOT=$ROOT

summary "ol e2e"
