# tests/lib/check.sh: what the command-line suites of tests/tinyllm and
# tests/tokenizer share (sourced, never run). Quiet on a pass, one FAIL line and
# the output on a failure, counted in $passed and $failed.
#
#   . "$(dirname "$0")/../lib/check.sh"
#   check "info counts the parameters" 0 "134,515,008" -- "$TINYLLM" info "$dir"
#   summary "tinyllm info, logits"      # the last line; its status is the suite's
passed=0 failed=0

ok()  { passed=$((passed + 1)); }
# bad WHAT [OUTPUT]: a failed check, and what the command printed
bad() { failed=$((failed + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | head -20; }

# check NAME EXPECTED_STATUS NEEDLE... -- COMMAND...: runs COMMAND, wants the
# exit status and every needle in its stdout+stderr.
check() {
    local name=$1 want=$2
    shift 2
    local needles=()
    while [ "$1" != "--" ]; do needles+=("$1"); shift; done
    shift
    local out status
    out=$("$@" 2>&1)
    status=$?
    if [ "$status" -ne "$want" ]; then
        bad "$name: exit status $status, expected $want" "$out"
        return
    fi
    local n
    for n in "${needles[@]}"; do
        grep -qF -- "$n" <<<"$out" || { bad "$name: output lacks '$n'" "$out"; return; }
    done
    ok
}

# summary LABEL: "LABEL: P passed, F failed"; fails when a check failed
summary() { echo "$1: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; }
