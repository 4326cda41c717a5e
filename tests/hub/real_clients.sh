#!/usr/bin/env bash
# Real clients against `tl-hub serve`: curl -sI and Python's urllib parse its
# answers as well-formed HTTP, follow the LFS redirect, resume with Range,
# and the server stops cleanly on SIGTERM. Usage: real_clients.sh TL_HUB
set -euo pipefail

bin=${1:?usage: real_clients.sh path/to/tl-hub}
work=$(mktemp -d /tmp/hub-clients-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "real_clients.sh: FAIL: $*" >&2; exit 1; }
checks=0
ok() { checks=$((checks + 1)); }

mkdir -p "$work/repos/org/tiny/sub"
printf '{"model_type": "llama"}\n' > "$work/repos/org/tiny/config.json"
/usr/bin/python3 -c "import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 256 for i in range(200000)))" \
  > "$work/repos/org/tiny/model.safetensors"
printf 'x' > "$work/repos/org/tiny/sub/a b.txt"

"$bin" serve "$work/repos" --lfs-threshold 100000 > "$work/out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -qs '^Hub: ' "$work/out" && break; sleep 0.05; done
endpoint=$(sed -n 's/^  export HF_ENDPOINT=//p' "$work/out")
[ -n "$endpoint" ] || fail "tl-hub printed no endpoint: $(cat "$work/out")"
ok

# curl -sI: status lines and headers as the real Hub sends them.
small=$(curl -sI "$endpoint/org/tiny/resolve/main/config.json")
echo "$small" | head -1 | grep -q '^HTTP/1.1 200' || fail "small HEAD: $small"
etag=$(git hash-object "$work/repos/org/tiny/config.json" 2>/dev/null || true)
if [ -n "$etag" ]; then
  echo "$small" | grep -qi "^ETag: \"$etag\"" || fail "ETag is not git's blob id $etag: $small"
fi
echo "$small" | grep -qi '^X-Repo-Commit: [0-9a-f]\{40\}' || fail "no X-Repo-Commit: $small"
ok
large=$(curl -sI "$endpoint/org/tiny/resolve/main/model.safetensors")
sha=$(sha256sum "$work/repos/org/tiny/model.safetensors" | cut -d' ' -f1)
echo "$large" | head -1 | grep -q '^HTTP/1.1 302' || fail "LFS HEAD: $large"
echo "$large" | grep -qi "^X-Linked-Etag: \"$sha\"" || fail "X-Linked-Etag: $large"
echo "$large" | grep -qi '^X-Linked-Size: 200000' || fail "X-Linked-Size: $large"
echo "$large" | grep -qi '^Location: http://127.0.0.1:' || fail "Location: $large"
ok
[ "$(curl -s "$endpoint/org/tiny/resolve/main/sub/a%20b.txt")" = x ] || fail "encoded path"
ok

# Python's urllib: follows the 302, resumes with Range, reads error codes.
/usr/bin/python3 - "$endpoint" "$work/repos/org/tiny" <<'EOF' || fail "urllib checks"
import hashlib, sys, urllib.error, urllib.request
endpoint, repo = sys.argv[1], sys.argv[2]
url = endpoint + "/org/tiny/resolve/main/model.safetensors"
want = open(repo + "/model.safetensors", "rb").read()

with urllib.request.urlopen(url) as r:           # follows the 302 to the CDN
    body = r.read()
    assert r.status == 200 and body == want, (r.status, len(body))
    assert not r.url.startswith(endpoint), r.url

req = urllib.request.Request(url, headers={"Range": "bytes=123456-"})
with urllib.request.urlopen(req) as r:
    assert r.status == 206, r.status
    assert r.headers["Content-Range"] == "bytes 123456-199999/200000", r.headers["Content-Range"]
    assert r.read() == want[123456:]

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
opener = urllib.request.build_opener(NoRedirect)
try:
    opener.open(urllib.request.Request(url, method="HEAD"))
    raise AssertionError("expected a 302")
except urllib.error.HTTPError as e:
    assert e.code == 302, e.code
    assert e.headers["X-Linked-Etag"] == '"%s"' % hashlib.sha256(want).hexdigest()
    assert int(e.headers["X-Linked-Size"]) == len(want)

for path, code in [("/org/none/resolve/main/x", "RepoNotFound"),
                   ("/org/tiny/resolve/v9/config.json", "RevisionNotFound"),
                   ("/org/tiny/resolve/main/nothing", "EntryNotFound")]:
    try:
        urllib.request.urlopen(endpoint + path)
        raise AssertionError(path + " did not fail")
    except urllib.error.HTTPError as e:
        assert e.code == 404 and e.headers["X-Error-Code"] == code, (path, e.code)
EOF
ok

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "tl-hub exited $status on SIGTERM"
grep -q '^Stopping (SIGTERM)' "$work/out" || fail "no stop message: $(tail -3 "$work/out")"
grep -q '^cdn GET  /repos/org/tiny/' "$work/out" || fail "no CDN request in the trace"
ok

# Ctrl-C stops it too (a script's background job starts with SIGINT ignored).
"$bin" serve "$work/repos" > "$work/out2" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -qs '^Hub: ' "$work/out2" && break; sleep 0.05; done
kill -INT "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "tl-hub exited $status on SIGINT"
grep -q '^Stopping (SIGINT)' "$work/out2" || fail "no stop message: $(tail -3 "$work/out2")"
ok
echo "real_clients.sh: $checks checks passed (curl -sI, Python urllib, SIGTERM, SIGINT)"
