#!/usr/bin/env bash
# tools/ol/README.md's file table names every source of tools/ol, and only
# files that exist (a header is covered by its .c file's row).
#   tests/ol/file_table.sh
set -u
DIR=$(cd "$(dirname "$0")/../../tools/ol" && pwd)
table=$(sed -n '/^## Files/,/^## /p' "$DIR/README.md" | grep '^| `')
bad=0
for f in "$DIR"/*.c "$DIR"/*.h; do
  name=$(basename "$f")
  case $name in *.h) [ -f "$DIR/${name%.h}.c" ] && continue ;; esac
  grep -qF "\`$name\`" <<<"$table" || { echo "FAIL tools/ol/README.md: the file table does not name $name"; bad=1; }
done
for name in $(grep -o '`[a-z_]*\.[ch]`' <<<"$table" | tr -d '`' | sort -u); do
  [ -f "$DIR/$name" ] || { echo "FAIL tools/ol/README.md: the file table names $name, which does not exist"; bad=1; }
done
[ "$bad" = 0 ] && echo "ok   tools/ol/README.md's file table matches tools/ol"
exit "$bad"
