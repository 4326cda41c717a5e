#!/usr/bin/env bash
# Every document a file of the repository points to is in the repository
# (issue 7, item 9): each design document a tracked text file names
# (FORMAT.md, syllabus.md, grading.md, ...: any NAME.md but a README.md,
# which a path names) is a tracked file of that name, and nothing points
# outside the repository at shared/docs/ or shared/seeds/.
#   tests/ol/docs.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
bad=0
files=$(git ls-files -- '*.c' '*.h' '*.md' '*.mk' '*.sh' '*.py' Makefile 2>/dev/null)
[ -n "$files" ] || { echo "FAIL docs.sh: git ls-files found nothing (not a git checkout?)"; exit 1; }
names=$(git ls-files -- '*.md' | sed 's|.*/||' | sort -u)
for f in $files; do
  [ -f "$f" ] && [ "$f" != tests/ol/docs.sh ] || continue
  if grep -nE 'shared/(docs|seeds)/' "$f" | sed "s|^|FAIL $f:|;s|$| (outside the repository)|" | grep .; then
    bad=1
  fi
  for doc in $(grep -oE '\b[A-Za-z][A-Za-z0-9_-]*\.md\b' "$f" | sort -u); do
    [ "$doc" = README.md ] && continue
    grep -qxF "$doc" <<<"$names" && continue
    echo "FAIL $f: points to $doc, which is not in the repository"; bad=1
  done
done
[ "$bad" = 0 ] && echo "ok   every document a file points to is in the repository"
exit "$bad"
