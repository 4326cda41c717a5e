#!/usr/bin/env bash
# The official JavaScript Hub client against `tl-hub serve` (issue 10):
# installs @huggingface/hub as pinned in tests/hub/js/package-lock.json into
# build/npm/hub (npm ci, with Debian's node; once: reinstalled only when the
# lock changes), serves a repo with nested folders, a sharded safetensors
# checkpoint, LFS files and a 0-byte file, and runs tests/hub/js/clients.mjs.
# The requests the client made are left in build/npm/hub/requests.log.
# Usage: js_client.sh path/to/tl-hub
set -euo pipefail

bin=$(realpath "${1:?usage: js_client.sh path/to/tl-hub}")
src=$(cd "$(dirname "$0")/js" && pwd)
npm_dir=$(realpath -m "${HUB_JS_DIR:-build/npm/hub}")
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "js_client.sh: FAIL: node and npm are needed (tools/install-deps.sh installs them)" >&2
    exit 1; }

mkdir -p "$npm_dir"
if ! cmp -s "$src/package-lock.json" "$npm_dir/package-lock.json" ||
   [ ! -f "$npm_dir/node_modules/@huggingface/hub/package.json" ]; then
  echo "js_client.sh: installing @huggingface/hub (npm ci, as tests/hub/js/package-lock.json pins)"
  cp "$src/package.json" "$src/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error) ||
    { rm -f "$npm_dir/package-lock.json"; echo "js_client.sh: FAIL: npm ci" >&2; exit 1; }
fi
cp "$src/clients.mjs" "$npm_dir/clients.mjs"   # next to node_modules, for its import
version=$(node -p "require('$npm_dir/node_modules/@huggingface/hub/package.json').version")

work=$(mktemp -d /tmp/hub-js-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
repos=$work/repos
mkdir -p "$repos/org/tiny/tokenizer" "$repos/org/tiny/a/b" "$repos/org/sharded/onnx"
printf '{"model_type": "llama", "hidden_size": 64}\n' >"$repos/org/tiny/config.json"
printf '{"version": "1.0"}\n' >"$repos/org/tiny/tokenizer/tokenizer.json"
printf 'deep\n' >"$repos/org/tiny/a/b/c.txt"
: >"$repos/org/tiny/empty.txt"
head -c 300000 /dev/urandom >"$repos/org/tiny/model.safetensors"
cp "$repos/org/tiny/config.json" "$repos/org/sharded/config.json"
head -c 200000 /dev/urandom >"$repos/org/sharded/model-00001-of-00002.safetensors"
head -c 150000 /dev/urandom >"$repos/org/sharded/model-00002-of-00002.safetensors"
printf '%s\n' '{"metadata": {"total_size": 350000}, "weight_map":' \
  '{"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}' \
  >"$repos/org/sharded/model.safetensors.index.json"
head -c 9000 /dev/urandom >"$repos/org/sharded/onnx/model.onnx"

threshold=8192
"$bin" serve "$repos" --lfs-threshold $threshold --page-size 3 --rename org/old-tiny=org/tiny \
  >"$work/hub.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -qs '^Hub: ' "$work/hub.log" && break; sleep 0.05; done
endpoint=$(sed -n 's/^  export HF_ENDPOINT=//p' "$work/hub.log")
commit=$(sed -n 's/^  org\/tiny  *main = \([0-9a-f]\{40\}\).*/\1/p' "$work/hub.log")
[ -n "$endpoint" ] && [ -n "$commit" ] ||
  { echo "js_client.sh: FAIL: tl-hub did not start"; cat "$work/hub.log"; exit 1; }

status=0
LFS_THRESHOLD=$threshold NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 \
  node "$npm_dir/clients.mjs" "$endpoint" "$repos" "$commit" "$work/cache" || status=$?
grep -E '^(hub|cdn) ' "$work/hub.log" >"$npm_dir/requests.log" || true
echo "js_client.sh: @huggingface/hub $version, node $(node --version):" \
  "$(wc -l <"$npm_dir/requests.log") requests (in $npm_dir/requests.log)"
[ "$status" -eq 0 ] || { echo "js_client.sh: FAIL"; exit 1; }
