#!/usr/bin/env bash
# The contract headers (contracts/) keep the promises of issue 7, item 5 that
# a script can check: each is the header itself (no #include by a relative
# path out of contracts/, such as "../../../tools/hub/hub.h"), has an include
# guard, and names the file of any document it points to.
#   tests/ol/contracts.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
bad=0
while IFS= read -r h; do
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$h" | sed "s|^|FAIL $h:|" | grep .; then bad=1; fi
  if ! grep -qE '^#ifndef [A-Z0-9_]+_H$' "$h"; then echo "FAIL $h: no include guard (#ifndef ..._H)"; bad=1; fi
  if grep -niE 'see (the )?docs\b' "$h" | sed "s|^|FAIL $h:|;s|$| (name the file)|" | grep .; then bad=1; fi
done < <(find contracts -name '*.h' | sort)
[ "$bad" = 0 ] && echo "ok   contracts/: every header is itself (no ../ include), guarded, and names what it points to"
exit "$bad"
