#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image
# from the zip `ol dist --gradescope` wrote (unpacked in /autograder/source).
# It installs, on Gradescope's Ubuntu base image (22.04 or later), what the
# grader's ol needs to build and grade students' C: GCC 12 (the runtime's
# libraries were built with it), GNU patch (the mutants are applied there,
# to the reference's source: the coverage build must be made by the GCC
# whose gcov reads it), Check, cJSON, OpenBLAS, libcurl, OpenSSL,
# libmicrohttpd, binutils, Python 3 (merge_results.py).
# OL_SETUP_DRY_RUN=1 prints the apt-get line instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
packages=(gcc-12 make binutils patch pkg-config check libsubunit-dev libcjson-dev libopenblas-dev
          libcurl4-openssl-dev libssl-dev libmicrohttpd-dev python3 diffutils)
if [ "${OL_SETUP_DRY_RUN:-}" = 1 ]; then
  echo "apt-get install -y --no-install-recommends ${packages[*]}"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}"
# gcc and gcov as GCC 12, first on run_autograder's PATH
mkdir -p "$here/shim"
ln -sf "$(command -v gcc-12)" "$here/shim/gcc"
ln -sf "$(command -v gcc-12)" "$here/shim/cc"
ln -sf "$(command -v gcov-12)" "$here/shim/gcov"
"$here/release/bin/ol" list >/dev/null
echo "setup.sh: ready: $("$here/shim/gcc" --version | head -1)"
