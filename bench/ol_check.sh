#!/usr/bin/env bash
# The cost of grading: `ol check L7.1` with the model answers, cold (an empty
# build/ol) and warm (everything cached), median of N runs each. With a second
# ol (an older build, say), the two run in turn, so both see the same load on a
# shared machine, and the ratios are printed.
#   bench/ol_check.sh OL [N] [BASELINE_OL]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OL=$(realpath "$1"); N=${2:-5}; BASE=${3:+$(realpath "$3")}
export OL_ROOT=$ROOT NO_COLOR=1
mkdir -p "$ROOT/build"
W=$(mktemp -d "$ROOT/build/bench-ol.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 2
"$OL" start L7.1 > /dev/null
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c
rm -f c/tests/l7-1-rmsnorm/*.c
cp "$ROOT"/reference/tests/l7-1-rmsnorm/*.c c/tests/l7-1-rmsnorm/
seconds() { # OL: one check, its wall time (it must pass)
  local s e
  s=$(date +%s.%N)
  if ! "$1" check L7.1 > "$W/out.txt" 2>&1; then
    echo "bench: the check failed:" >&2; tail -20 "$W/out.txt" >&2; exit 1
  fi
  e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f\n", e - s}'
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -a cold warm bcold bwarm
for i in $(seq "$N"); do
  for who in new base; do
    [ "$who" = base ] && [ -z "$BASE" ] && continue
    bin=$OL; [ "$who" = base ] && bin=$BASE
    rm -rf build/ol
    c=$(seconds "$bin"); w=$(seconds "$bin")
    if [ "$who" = new ]; then cold+=("$c"); warm+=("$w"); else bcold+=("$c"); bwarm+=("$w"); fi
  done
done
printf 'ol check L7.1 (model answers), median of %d: cold %.2f s, warm %.3f s\n' "$N" \
  "$(median "${cold[@]}")" "$(median "${warm[@]}")"
if [ -n "$BASE" ]; then
  printf 'baseline %s: cold %.2f s, warm %.3f s; ratio cold %.2f, warm %.2f\n' "$BASE" \
    "$(median "${bcold[@]}")" "$(median "${bwarm[@]}")" \
    "$(awk -v a="$(median "${cold[@]}")" -v b="$(median "${bcold[@]}")" 'BEGIN {print a / b}')" \
    "$(awk -v a="$(median "${warm[@]}")" -v b="$(median "${bwarm[@]}")" 'BEGIN {print a / b}')"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
