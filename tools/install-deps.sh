#!/usr/bin/env bash
# Installs, on a Debian machine and only where missing, every package the
# project needs. Fast when everything is present (dpkg -s only).
set -euo pipefail

packages=(
  gcc make pkg-config patch
  check libsubunit-dev           # unit tests (Check) and its TAP output
  libcjson-dev                   # config.json, fixture metadata, reports
  libonig-dev libutf8proc-dev    # the tokenizer: Oniguruma regexes, Unicode normalisation
  libcurl4-openssl-dev libssl-dev  # downloader, sha256/sha1
  libmicrohttpd-dev              # the fake Hub
  libopenblas-dev                # f32 GEMM
  lcov                           # coverage for NoCoverage mutants
  valgrind
  python3 python3-torch python3-numpy  # the oracle that makes fixtures
  python3-jinja2                 # the chat templates' oracle (transformers renders with Jinja2)
  zip unzip                      # ol dist --gradescope writes the autograder's zip
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# node and npm run the JavaScript Hub client's test (tests/hub/js_client.sh)
# and the tokenizer's oracles (oracle/tokenizer); any install of them will do
# (a node package may bundle its own npm).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# Debian's Chromium, headless, opens `ol check --html` reports in their test
# (tests/ol/reports.sh); any install of it will do.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (or install these with sudo apt-get install)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
