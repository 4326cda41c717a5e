#!/usr/bin/env bash
# The tools' C sources keep lines to 100 columns, as the reference lessons do
# (tests/ol/lessons.sh checks those): a long message is split into adjacent
# string literals, which the compiler joins into the same bytes.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
long=$(cd "$root" && find tools -name '*.[ch]' -print0 | sort -z |
       xargs -0 awk 'length > 100 {print FILENAME ":" FNR ": " length " columns"}')
if [ -n "$long" ]; then
    echo "FAIL lines over 100 columns (split the string or the comment):"
    echo "$long" | sed 's/^/  /'
    exit 1
fi
echo "ok   tools/: every C line within 100 columns"
