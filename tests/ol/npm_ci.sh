#!/usr/bin/env bash
# Installs the npm packages a folder's package-lock.json pins into DEST
# (npm ci, with Debian's node), once: again only when the lock changes or
# the install is incomplete. What tests/hub/js_client.sh does, for ol's own.
#   tests/ol/npm_ci.sh SOURCE_DIR DEST_DIR CHECK_FILE
# CHECK_FILE, relative to DEST_DIR, is a file a whole install has.
set -euo pipefail
src=$(cd "${1:?usage: npm_ci.sh SOURCE_DIR DEST_DIR CHECK_FILE}" && pwd)
dest=$(realpath -m "${2:?}")
check=${3:?}
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "npm_ci.sh: FAIL: node and npm are needed (tools/install-deps.sh installs them)" >&2
    exit 1; }
mkdir -p "$dest"
if ! cmp -s "$src/package-lock.json" "$dest/package-lock.json" || [ ! -f "$dest/$check" ]; then
  pins=$(cd "$src" && node -p 'const d = require("./package.json").dependencies;
    Object.entries(d).map(([n, v]) => n + "@" + v).join(" ")')
  echo "npm_ci.sh: installing $pins into $dest"
  rm -f "$dest/package-lock.json"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) ||
    { rm -f "$dest/package-lock.json"; echo "npm_ci.sh: FAIL: npm ci in $dest" >&2; exit 1; }
fi
