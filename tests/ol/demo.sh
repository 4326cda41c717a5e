#!/usr/bin/env bash
# `make demo`: the student's flow on L7.1 in a scratch workspace, with the
# reference standing in for the student's code and the model-answer tests
# for theirs.   tests/ol/demo.sh OL_BINARY WORKSPACE
set -eu
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WS=$2
case "$(realpath -m "$WS")" in
  "$ROOT"/build/*) ;;
  *) echo "demo: the workspace must be under $ROOT/build" >&2; exit 2 ;;
esac
export OL_ROOT=$ROOT
rm -rf "$WS"; mkdir -p "$WS"; cd "$WS"
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
say() { printf '\n%s%s%s\n' "$bold" "$*" "$plain"; }

say "\$ ol start L7.1"
"$OL" start L7.1
say "# You write c/tinyllm/modern/rmsnorm.c (the demo copies the reference)"
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
say "\$ ol tests L7.1"
"$OL" tests L7.1
say "# You write your tests in c/tests/l7-1-rmsnorm/ (the demo copies the model answer)"
rm -f c/tests/l7-1-rmsnorm/*.c
cp "$ROOT"/reference/tests/l7-1-rmsnorm/*.c c/tests/l7-1-rmsnorm/
ls c/tests/l7-1-rmsnorm/
say "\$ ol check L7.1 --json report.json --gradescope results.json"
"$OL" check L7.1 --json report.json --gradescope results.json
say "\$ ol diff L7.1 --unified"
"$OL" diff L7.1 --unified
say "The workspace is $WS: report.json opens in Stryker's mutation-testing-elements viewer."
