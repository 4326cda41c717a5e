#!/usr/bin/env bash
# Runs a Check program (testgen's main) once per test case (CK_RUN_CASE: one
# test file's tests), JOBS at a time, each under an optional command (valgrind):
# a single-threaded checker then uses every core. One line per case, in order;
# a failing case's whole output; exit 1 if any case failed.
#   tests/run_cases.sh JOBS PROGRAM CASE... [-- COMMAND...]
set -u
jobs=$1 prog=$2
shift 2
cases=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cases+=("$1"); shift; done
[ $# -gt 0 ] && shift
T=$(mktemp -d "${TMPDIR:-/tmp}/run-cases.XXXXXX")
trap 'rm -rf "$T"' EXIT

run_case() { # INDEX COMMAND...
  local i=$1
  shift
  CK_RUN_CASE=${cases[$i]} "$@" "$prog" >"$T/$i.out" 2>&1
  echo $? >"$T/$i.rc"
}

running=0
for i in "${!cases[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  run_case "$i" "$@" &
  running=$((running + 1))
done
wait

status=0 checks=0
for i in "${!cases[@]}"; do
  rc=$(cat "$T/$i.rc" 2>/dev/null || echo "none")
  summary=$(grep -E '^[0-9]+%: Checks: ' "$T/$i.out" | tail -n 1)
  n=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\),.*/\1/p' <<<"$summary")
  if [ "$rc" = 0 ] && [ -n "$n" ] && [ "$n" -gt 0 ]; then
    echo "ok   ${cases[$i]}: $summary"
    checks=$((checks + n))
  else
    echo "FAIL ${cases[$i]} (exit $rc)"
    sed 's/^/     | /' "$T/$i.out"
    status=1
  fi
done
echo "$((${#cases[@]})) cases, $checks checks$([ $status = 0 ] && echo ", every one passed")"
exit $status
