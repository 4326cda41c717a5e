# tests/ol/lib.sh: what the shell suites of tests/ol share (sourced, never run).
# One line per check ("ok   NAME", or "FAIL NAME" and the last run's output),
# counted in $checks and $failures, over the output of the last `run`.
#
#   . "$(dirname "$0")/lib.sh"
#   run "$OL" start L7.1
#   expect "start copies the stub" 0 "created c/tinyllm/modern/rmsnorm.c"
#   summary "ol e2e"                 # the last line; its status is the suite's
#
# RUN_TIMEOUT (seconds, optional): a run that takes longer is stopped.
failures=0 checks=0

ok()   { checks=$((checks + 1)); echo "ok   $*"; }
fail() {
  checks=$((checks + 1)) failures=$((failures + 1))
  echo "FAIL $*"; printf '%s\n' "${out:-}" | sed 's/^/     | /' | tail -40
}

# run CMD...: sets $out (stdout and stderr together) and $rc
run() {
  local limit=()
  [ -n "${RUN_TIMEOUT:-}" ] && limit=(timeout -k 10 "$RUN_TIMEOUT")
  out=$("${limit[@]}" "$@" 2>&1); rc=$?
}

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

# absent NAME TEXT: the last run did not print TEXT
absent() { if grep -qF -- "$2" <<<"$out"; then fail "$1 (\"$2\" was printed)"; else ok "$1"; fi; }

# summary LABEL: "LABEL: P of N checks passed"; fails when a check failed
summary() { echo "$1: $((checks - failures)) of $checks checks passed"; [ "$failures" -eq 0 ]; }
