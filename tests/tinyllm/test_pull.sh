#!/usr/bin/env bash
# `tinyllm pull` against the fake Hub as a program (`tl-hub serve DIR`, what
# `ol hub serve` runs): the repo listed through the API (in pages), a plain
# model, a sharded one, --include/--exclude, pulling twice, explicit files,
# offline, the failures (exit 1 with the downloader's message), a Hub that
# lies (hostile_hub.py) and usage errors (exit 2). Run by `make test-tinyllm`;
# TINYLLM and TL_HUB are the binaries.
set -u
TINYLLM=$(realpath "${TINYLLM:-build/bin/tinyllm}")
TL_HUB=$(realpath "${TL_HUB:-build/bin/tl-hub}")
work=$(mktemp -d /tmp/tl-pull-test-XXXXXX)
hub_pid=
hostile_pid=
cleanup() {
    [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null
    [ -n "$hostile_pid" ] && kill "$hostile_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
unset HF_TOKEN HF_HUB_OFFLINE HF_ENDPOINT TINYLLM_CACHE

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/  | /' <<<"$2" | head -20; }

# run ARGS...: tinyllm pull into $work/cache; sets out, err, status
run() {
    out=$("$TINYLLM" pull "$@" --endpoint "$endpoint" --cache "$work/cache" 2>"$work/err")
    status=$?
    err=$(cat "$work/err")
}
# expect NAME STATUS NEEDLE...: the last run's status, and each needle in its stderr
expect() {
    local name=$1 want=$2 ok=1
    shift 2
    [ "$status" -eq "$want" ] || { ok=0; fail "$name: exit status $status, expected $want" "$err"; }
    for n in "$@"; do
        grep -qF -- "$n" <<<"$err" || { ok=0; fail "$name: stderr lacks '$n'" "$err"; }
    done
    [ $ok = 1 ] && pass
}
same() {   # NAME FILE1 FILE2
    if cmp -s "$2" "$3"; then pass; else fail "$1: $2 differs from $3"; fi
}
# cdn_gets: GETs the CDN has answered so far (the hub's trace on its stdout)
cdn_gets() { grep -c '^cdn GET' "$work/hub.log"; }

# ---- the repos -----------------------------------------------------------
hub=$work/hub
mkdir -p "$hub/org/tiny" "$hub/org/sharded" "$hub/org/bare" "$hub/org/evil" "$hub/org/nested/sub/deep" \
    "$hub/org/partial" "$hub/org/noconfig"
printf '{"model_type": "llama", "hidden_size": 64}\n' >"$hub/org/tiny/config.json"
printf '{"version": "1.0"}\n' >"$hub/org/tiny/tokenizer.json"
head -c 300000 /dev/urandom >"$hub/org/tiny/model.safetensors"
cp "$hub/org/tiny/config.json" "$hub/org/sharded/config.json"
head -c 200000 /dev/urandom >"$hub/org/sharded/model-00001-of-00002.safetensors"
head -c 150000 /dev/urandom >"$hub/org/sharded/model-00002-of-00002.safetensors"
cat >"$hub/org/sharded/model.safetensors.index.json" <<'EOF'
{"metadata": {"total_size": 350000},
 "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                "b.weight": "model-00002-of-00002.safetensors",
                "c.weight": "model-00001-of-00002.safetensors"}}
EOF
cp "$hub/org/tiny/config.json" "$hub/org/bare/config.json"
cp "$hub/org/tiny/config.json" "$hub/org/evil/config.json"
printf '{"weight_map": {"a": "../../escape.safetensors"}}\n' >"$hub/org/evil/model.safetensors.index.json"
printf '# a model card\n' >"$hub/org/tiny/README.md"          # listed, not a model file
cp "$hub/org/tiny/config.json" "$hub/org/nested/config.json"
printf 'a\n' >"$hub/org/nested/sub/a.txt"
printf 'b\n' >"$hub/org/nested/sub/deep/b.txt"
printf 'not a partial download\n' >"$hub/org/nested/sub/a.txt.part"   # the cache's own suffix
head -c 5000 /dev/urandom >"$hub/org/nested/model.safetensors"
cp "$hub/org/tiny/config.json" "$hub/org/partial/config.json"     # the index names a missing shard
cp "$hub/org/sharded/model.safetensors.index.json" "$hub/org/partial/"
cp "$hub/org/sharded/model-00001-of-00002.safetensors" "$hub/org/partial/"
head -c 5000 /dev/urandom >"$hub/org/noconfig/model.safetensors"

# two entries a page: every listing here takes several pages (Link: rel="next")
# org/old-tiny and org/gone were renamed (to a repo that is gone since)
"$TL_HUB" serve "$hub" --lfs-threshold 4096 --page-size 2 --rename org/old-tiny=org/tiny \
    --rename org/gone=org/nowhere >"$work/hub.log" 2>&1 &
hub_pid=$!
endpoint=
for _ in $(seq 100); do
    endpoint=$(sed -n 's/^Hub: \(http:[^ ]*\).*/\1/p' "$work/hub.log")
    [ -n "$endpoint" ] && break
    sleep 0.05
done
[ -n "$endpoint" ] || { echo "FAIL tl-hub serve did not start"; cat "$work/hub.log"; exit 1; }

# ---- a model: listed through the API, the model's files fetched ---------
run org/tiny
expect "pull org/tiny" 0 "config.json" "model.safetensors" "tokenizer.json" "4 files at"
dir=$work/cache/org--tiny/main
[ "$out" = "$dir" ] && pass || fail "pull org/tiny: stdout '$out', expected the folder $dir"
same "pull org/tiny: config.json" "$dir/config.json" "$hub/org/tiny/config.json"
same "pull org/tiny: tokenizer.json" "$dir/tokenizer.json" "$hub/org/tiny/tokenizer.json"
same "pull org/tiny: model.safetensors" "$dir/model.safetensors" "$hub/org/tiny/model.safetensors"
[ ! -e "$dir/README.md" ] && pass || fail "pull org/tiny fetched README.md, not a model file"
[ -z "$(find "$work/cache" -name '*.part')" ] && pass || fail "a .part file was left"
grep -q '^hub GET  /api/models/org/tiny/tree/main?recursive=true&expand=false -> 200' "$work/hub.log" &&
    grep -q '^hub GET  /api/models/org/tiny/tree/main?recursive=true&expand=false&cursor=' "$work/hub.log" &&
    pass || fail "the listing did not follow the Link pages" "$(grep api "$work/hub.log")"
grep -q "HEAD /org/tiny/resolve/main/generation_config.json" "$work/hub.log" &&
    fail "a file the listing lacks was asked for" || pass

# ---- a renamed repo: the API's 307 to its new name followed, as the Hub's clients do
run org/old-tiny
expect "pull a renamed repo" 0 "model.safetensors"
same "pull a renamed repo: model.safetensors" "$work/cache/org--old-tiny/main/model.safetensors" \
    "$hub/org/tiny/model.safetensors"
grep -q '^hub GET  /api/models/org/old-tiny/revision/main?expand=sha -> 307' "$work/hub.log" &&
    pass || fail "the renamed repo's listing was not a 307" "$(grep old-tiny "$work/hub.log")"
run org/gone
expect "a repo renamed to one that is gone" 1 "RepoNotFound" "org/nowhere"

# ---- again: nothing is downloaded ------------------------------------------
before=$(cdn_gets)
run org/tiny
expect "pull org/tiny again" 0
[ "$(cdn_gets)" = "$before" ] && pass || fail "the second pull fetched the model again"

# ---- offline: the cache only, listed from the cache ------------------------
lines=$(wc -l <"$work/hub.log")
HF_HUB_OFFLINE=1 run org/tiny
expect "offline pull" 0 "model.safetensors"
[ "$out" = "$dir" ] && pass || fail "offline pull: stdout '$out'"
[ "$(wc -l <"$work/hub.log")" = "$lines" ] && pass || fail "offline pull made requests"
for yes in YES on; do   # huggingface_hub's true values: 1, ON, YES, TRUE, any case
    HF_HUB_OFFLINE=$yes run org/tiny
    expect "offline pull, HF_HUB_OFFLINE=$yes" 0 "model.safetensors"
done
[ "$(wc -l <"$work/hub.log")" = "$lines" ] && pass || fail "HF_HUB_OFFLINE=YES/on made requests"
HF_HUB_OFFLINE=1 run org/sharded
expect "offline pull of a repo never pulled" 1 "HF_HUB_OFFLINE"
# a pull that did not finish: offline, the cache lacks a file, not the repo
mkdir -p "$work/half" && cp -r "$work/cache/org--tiny" "$work/half/"
rm "$work/half/org--tiny/main/model.safetensors"
out=$(HF_HUB_OFFLINE=1 "$TINYLLM" pull org/tiny --cache "$work/half" 2>"$work/err")
status=$? err=$(cat "$work/err")
expect "offline pull, the weights not cached" 1 "the cache holds no safetensors weights" \
    "unset HF_HUB_OFFLINE"
rm "$work/half/org--tiny/main/config.json"
out=$(HF_HUB_OFFLINE=1 "$TINYLLM" pull org/tiny --cache "$work/half" 2>"$work/err")
status=$? err=$(cat "$work/err")
expect "offline pull, config.json not cached" 1 "the cache holds no config.json" \
    "unset HF_HUB_OFFLINE"

# ---- a sharded model: the index and each shard once -----------------------
run org/sharded
expect "pull org/sharded" 0 "model.safetensors.index.json" "model-00001-of-00002.safetensors" "model-00002-of-00002.safetensors"
sdir=$work/cache/org--sharded/main
for f in model.safetensors.index.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors; do
    same "pull org/sharded: $f" "$sdir/$f" "$hub/org/sharded/$f"
done
[ ! -e "$sdir/model.safetensors" ] && pass || fail "pull org/sharded made a model.safetensors"

# ---- explicit files ---------------------------------------------------------
run org/sharded config.json model-00002-of-00002.safetensors --revision main
expect "pull explicit files" 0 "config.json" "model-00002-of-00002.safetensors"
[ "$out" = "$sdir" ] && pass || fail "pull explicit files: stdout '$out'"

# ---- --include / --exclude, as hf download has them ------------------------
rm -rf "$work/cache"
run org/nested --include 'sub/'
expect "--include sub/" 0 "sub/a.txt" "sub/deep/b.txt"
ndir=$work/cache/org--nested/main
same "--include: sub/deep/b.txt" "$ndir/sub/deep/b.txt" "$hub/org/nested/sub/deep/b.txt"
[ ! -e "$ndir/config.json" ] && [ ! -e "$ndir/model.safetensors" ] && pass ||
    fail "--include sub/ fetched files outside sub/"
# a repository file named like a partial download is skipped, never cached as one
grep -q "sub/a.txt.part .*skipped" <<<"$err" && [ ! -e "$ndir/sub/a.txt.part" ] && pass ||
    fail "--include sub/: sub/a.txt.part was not skipped" "$err"
run org/tiny --include '*.json' --exclude 'tok*'
expect "--include *.json --exclude tok*" 0 "config.json"
[ -e "$dir/config.json" ] && [ ! -e "$dir/tokenizer.json" ] && [ ! -e "$dir/model.safetensors" ] &&
    pass || fail "--include/--exclude chose the wrong files: $(ls "$dir")"
run org/tiny --exclude 'tokenizer.json'
expect "--exclude on the model's files" 0 "model.safetensors"
[ ! -e "$dir/tokenizer.json" ] && pass || fail "--exclude tokenizer.json fetched it"
run org/tiny --include 'nothing*'
expect "--include matching nothing" 1 "no file" "matches --include"
run org/tiny --exclude '*.safetensors'
expect "--exclude of the weights" 1 "no safetensors"

# ---- failures: exit 1 and the downloader's message -------------------------
run org/tiny nope.bin
expect "a missing file" 1 "nope.bin" "EntryNotFound"
[ -z "$out" ] && pass || fail "a failed pull printed a folder: '$out'"
run org/bare
expect "a repo without weights" 1 "neither model.safetensors nor model.safetensors.index.json"
run org/evil
expect "an index naming ../ shards" 1 "../../escape.safetensors" "invalid filename"
[ -z "$(find "$work" -name 'escape*')" ] && pass || fail "the evil index wrote a file"
run org/partial
expect "an index naming a shard the repo lacks" 1 "model-00002-of-00002.safetensors" "does not have"
run org/noconfig
expect "a listing without config.json" 1 "no config.json"
run org/nothing
expect "a missing repo" 1 "RepoNotFound"
run ../escape
expect "a bad repo id" 1 "invalid repo id"
run org/tiny --revision ../..
expect "a bad revision" 1 "invalid revision"

# ---- a Hub that lies (hostile_hub.py): a clear error, at once, in bounded memory
python3 "$(dirname "$0")/hostile_hub.py" "$work/hostile.port" >"$work/hostile.log" 2>&1 &
hostile_pid=$!
for _ in $(seq 200); do [ -s "$work/hostile.port" ] && break; sleep 0.05; done
if [ -s "$work/hostile.port" ]; then
    hub_endpoint=$endpoint endpoint=http://127.0.0.1:$(cat "$work/hostile.port")
    # each case would run for minutes, or take gigabytes, if not refused at once
    mem() { (ulimit -v 2000000; timeout 20 "$@"); }
    status=0; mem "$TINYLLM" pull h/loop --endpoint "$endpoint" --cache "$work/cache" \
        2>"$work/err" || status=$?; err=$(cat "$work/err")
    expect "a next page back to itself" 1 "was listed before (a loop)"
    status=0; mem "$TINYLLM" pull h/longpath --endpoint "$endpoint" --cache "$work/cache" \
        2>"$work/err" || status=$?; err=$(cat "$work/err")
    expect "listing pages of 30 MB paths" 1 "longer than any the cache can hold"
    status=0; mem "$TINYLLM" pull h/manynames --endpoint "$endpoint" --cache "$work/cache" \
        2>"$work/err" || status=$?; err=$(cat "$work/err")
    expect "listing pages of 7,000 paths of 4,000 bytes" 1 "256 MB of names"
    status=0; mem "$TINYLLM" pull h/bigpage --endpoint "$endpoint" --cache "$work/cache" \
        2>"$work/err" || status=$?; err=$(cat "$work/err")
    expect "a listing page that never ends" 1 "sent more than 32 MB"
    [[ $err != *"no answer"* ]] && pass || fail "a big page is 'no answer'" "$err"
    run h/escape
    expect "a revision sha of terminal escapes" 0 "2 files at main"
    [[ $err != *$'\e'* ]] && pass || fail "the sha's escapes reached stderr" "$err"
    run h/moving
    expect "a branch moving during the pull" 1 "main moved from aaaa" "to bbbb" "run the pull again"
    [ -z "$out" ] && pass || fail "a pull across a moving branch printed a folder: '$out'"
    run h/moving
    expect "the pull run again after the branch moved" 0 "files at bbbb"
    status=0; mem "$TINYLLM" pull h/bigindex --endpoint "$endpoint" --cache "$work/cache" \
        2>"$work/err" || status=$?; err=$(cat "$work/err")
    expect "a safetensors index of 65 MB" 1 "more than a safetensors index needs (64 MB at most)"
    run h/dups --include '*'
    expect "a listing naming each file 500 times" 0 "2 files at"
    [ "$(grep -c '^  config.json ' <<<"$err")" = 1 ] && pass ||
        fail "a file listed 500 times was fetched more than once" "$err"
    run h/ratelimit
    expect "a listing rate-limited for 1.5 s (Retry-After: 1)" 0 "2 files at"
    run h/longnext --include '*'   # it was the last page: 1 file, exit 0
    expect "a next page URL of 5,000 bytes" 1 "names a next page whose URL is longer than 4095"
    run h/movingfiles config.json model.safetensors   # named files: no listing, same check
    expect "a branch moving during a pull of named files" 1 "main moved from aaaa" "to bbbb"
    [ -z "$out" ] && pass || fail "a pull of named files across a moving branch printed '$out'"
    started=$SECONDS
    HF_HUB_ETAG_TIMEOUT=1 run h/stall
    expect "an API that accepts, then stays silent" 1 "no answer from" "in time (3 attempts" \
        "HF_HUB_ETAG_TIMEOUT is the seconds of silence allowed (now 1)"
    (( SECONDS - started < 15 )) && pass ||
        fail "a silent API held the pull $((SECONDS - started)) s with HF_HUB_ETAG_TIMEOUT=1"
    HF_HUB_DOWNLOAD_TIMEOUT=soon run h/stall
    expect "HF_HUB_DOWNLOAD_TIMEOUT not a number" 2 "HF_HUB_DOWNLOAD_TIMEOUT='soon' is not a number"
    run h/gated
    expect "a gated repo, no token" 1 "401 GatedRepo" "gated: set HF_TOKEN"
    HF_TOKEN=t run h/gated
    expect "a gated repo, a token" 1 "403 GatedRepo" "accept its conditions"
    [[ $err != *"set HF_TOKEN"* ]] && pass || fail "a token was sent, pull says to set one" "$err"
    for c in escname esccommit escindex; do   # what the server sent is quoted, escapes shown as \xNN
        run h/$c
        expect "$c: refused" 1 '\x1b]0;pwned\x07\x1b[2J'
        [[ $err != *$'\e'* ]] && pass || fail "$c: the escapes reached stderr" "$err"
    done
    endpoint=$hub_endpoint
else
    fail "hostile_hub.py did not start" "$(cat "$work/hostile.log")"
fi

# ---- usage: exit 2 ----------------------------------------------------------
for args in "" "org/tiny --revision" "org/tiny --frobnicate" "org/tiny config.json --include x"; do
    "$TINYLLM" pull $args >/dev/null 2>"$work/err"
    status=$? err=$(cat "$work/err")
    expect "usage: pull $args" 2 "usage: tinyllm pull"
done
"$TINYLLM" pull --help >"$work/help" 2>&1 && grep -q "usage: tinyllm pull" "$work/help" && pass \
    || fail "pull --help"

echo "tinyllm pull: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
