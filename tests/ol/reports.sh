#!/usr/bin/env bash
# ol check's reports read by the official tools (issue 21, items 5 and 6),
# for a passing, a failing and an INVALID suite of L7.1:
#   - --json validates against Stryker's mutation-testing-report-schema with
#     ajv (tests/ol/js, pinned); a report spoiled on purpose does not;
#   - the reference's source is in the report only after a pass;
#   - --html opens in Debian's headless Chromium (fresh profile, offline)
#     with no console or page error and no request off the file, and the
#     rendered page shows the mutant count, each survivor marked in the
#     source, and the student's test files (tests/ol/js/render_report.mjs).
#   tests/ol/reports.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY
JS=$ROOT/build/npm/ol-tests
T=$(mktemp -d "${TMPDIR:-/tmp}/ol-reports.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/ol/lib.sh"

bash "$ROOT/tests/ol/npm_ci.sh" "$ROOT/tools/ol/report-viewer" "$ROOT/build/npm/report-viewer" \
  node_modules/mutation-testing-elements/dist/mutation-test-elements.js || exit 1
bash "$ROOT/tests/ol/npm_ci.sh" "$ROOT/tests/ol/js" "$JS" \
  node_modules/playwright-core/package.json ||
  exit 1
cp "$ROOT"/tests/ol/js/*.mjs "$JS/"   # next to node_modules, for their imports
command -v chromium >/dev/null ||
  { echo "FAIL chromium is missing (tools/install-deps.sh installs it)"; exit 1; }

# three suites of L7.1, the reference as the student's code
REF=$ROOT/reference/tinyllm/modern/rmsnorm.c MODEL=$ROOT/reference/tests/l7-1-rmsnorm
for kind in passing failing invalid; do
  W=$T/$kind; mkdir -p "$W/c/tinyllm/modern" "$W/c/tests/l7-1-rmsnorm"
  cp "$REF" "$W/c/tinyllm/modern/"
  # the student's own file, told from the reference by its last line
  [ "$kind" = passing ] || echo "/* $kind: the student's own file */" >>"$W/c/tinyllm/modern/rmsnorm.c"
done
cp "$MODEL"/*.c "$T/passing/c/tests/l7-1-rmsnorm/"
cp "$MODEL/test_my_hand_examples.c" "$T/failing/c/tests/l7-1-rmsnorm/"
cp "$MODEL/test_my_hand_examples.c" "$T/invalid/c/tests/l7-1-rmsnorm/"
cat >"$T/invalid/c/tests/l7-1-rmsnorm/test_wrong.c" <<'EOF'
/* A wrong expectation: RMSNorm of a row of ones is ones, not twos. */
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
declare -A want_rc=([passing]=0 [failing]=1 [invalid]=1)
for kind in passing failing invalid; do
  ( cd "$T/$kind" &&
    "$OL" check L7.1 --json "$T/$kind.json" --html "$T/$kind.html" >"$T/$kind.log" 2>&1
    echo $? >"$T/$kind.rc" ) &
done
wait
for kind in passing failing invalid; do
  out=$(cat "$T/$kind.log")
  [ "$(cat "$T/$kind.rc")" = "${want_rc[$kind]}" ] && [ -s "$T/$kind.json" ] &&
    [ -s "$T/$kind.html" ] \
    && ok "$kind suite: ol check exits ${want_rc[$kind]} and writes --json and --html" \
    || fail "$kind suite: ol check exits ${want_rc[$kind]} and writes --json and --html" \
            "(rc $(cat "$T/$kind.rc"))"
done
grep -q "INVALID" "$T/invalid.log" && ok "the invalid suite is graded INVALID" ||
  { out=$(cat "$T/invalid.log"); fail "the invalid suite is graded INVALID"; }

# item 6: the official schema, with ajv
run node "$JS/validate_report.mjs" "$T/passing.json" "$T/failing.json" "$T/invalid.json"
[ "$rc" = 0 ] && [ "$(grep -c '^valid ' <<<"$out")" = 3 ] \
  && ok "the three --json reports validate against the official schema with ajv (${out##*(}" \
  || fail "the three --json reports validate against the official schema with ajv"
python3 - "$T/failing.json" "$T/spoiled.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
f = next(iter(r["files"].values()))
f["mutants"][0]["status"] = "Dead"          # not a status of the schema
del f["mutants"][1]["location"]             # a required field
json.dump(r, open(sys.argv[2], "w"))
EOF
run node "$JS/validate_report.mjs" "$T/spoiled.json"
[ "$rc" = 1 ] && grep -q "must be equal to one of the allowed values" <<<"$out" &&
  grep -q "location" <<<"$out" \
  && ok "a spoiled report (an unknown status, a missing location) is refused by the same check" \
  || fail "a spoiled report (an unknown status, a missing location) is refused by the same check"
run python3 - "$T" "$REF" <<'EOF'
import json, sys
t, ref = sys.argv[1], open(sys.argv[2]).read()
for kind, shown in (("passing", True), ("failing", False), ("invalid", False)):
    (name, f), = json.load(open(f"{t}/{kind}.json"))["files"].items()
    mine = open(f"{t}/{kind}/c/tinyllm/modern/rmsnorm.c").read()
    if shown:
        assert name == "reference/tinyllm/modern/rmsnorm.c" and f["source"] == ref, kind
    else:
        assert name == "c/tinyllm/modern/rmsnorm.c" and f["source"] == mine != ref, kind
print("ok")
EOF
[ "$rc" = 0 ] &&
  ok "the reference's source is in the report after a pass only (the student's own file" \
     "for the failing and invalid suites)" \
              || fail "the reference's source is in the report after a pass only"

# item 5: the HTML in headless Chromium
for kind in passing failing invalid; do
  run timeout 180 node "$JS/render_report.mjs" "$T/$kind.html"
  echo "$out" | tail -1 >"$T/$kind.dom.json"
  [ "$rc" = 0 ] || { fail "$kind suite: Chromium renders the HTML report"; continue; }
  run python3 - "$T/$kind.json" "$T/$kind.dom.json" <<'EOF'
import json, re, sys
report, dom = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
mutants = [m for f in report["files"].values() for m in f["mutants"]]
assert not dom["errors"], f"errors in the page: {dom['errors']}"
# the overview's table: its "All files" row (two scores, then the counts of
# Killed .. Compile errors, Detected, Undetected and Total: ten numbers)
words = dom["overview"].split()
rows = []
for i in range(len(words) - 13):
    if words[i:i + 2] == ["All", "files"] and all(w.isdigit() for w in words[i + 4:i + 14]):
        rows.append([int(w) for w in words[i + 4:i + 14]])
assert rows, "no 'All files' row in the overview: " + dom["overview"][:400]
total = rows[0][-1]
assert total == len(mutants), f"the page shows {total} mutants, the report has {len(mutants)}"
# each mutant marked in the source with its status; the survivors among them
marks = {m["id"]: m["class"].split()[-1] for m in dom["marks"] if m["class"].startswith("mutant ")}
want = {m["id"]: m["status"] for m in mutants}
assert marks == want, f"marks {marks} != statuses {want}"
survivors = sorted(i for i, s in want.items() if s == "Survived")
for name in {t for tf in report.get("testFiles", {}) for t in [tf.split("/")[-1]]}:
    assert name in dom["testsText"], f"the tests tab does not list {name}"
print(f"{len(mutants)} mutants, survivors {survivors or 'none'}, "
      f"{sum(len(tf['tests']) for tf in report.get('testFiles', {}).values())} tests listed")
EOF
  [ "$rc" = 0 ] && ok "$kind suite: Chromium shows the report with no error: $out" \
  || fail "$kind suite: Chromium shows the report with no error, the mutant count" \
          "and the survivors"
done
# the same check fails on a page that does not render (the report taken out)
sed 's/\.report = {.*};$/.report = {"schemaVersion": "2"};/' "$T/failing.html" >"$T/broken.html"
run timeout 180 node "$JS/render_report.mjs" "$T/broken.html"
[ "$rc" != 0 ] && ok "a page that cannot render fails the same check" ||
  fail "a page that cannot render fails the same check"
summary "test-reports"
