#!/usr/bin/env bash
# Development machine: packs the fetched real tokenizers (tools/fetch-tokenizers.sh) into .gpu/tokz, xz-compressed,
# for tools/gpu/oracles.sh on the GPU machine (carry .gpu/tokz).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${DS4_TOKENIZER_CACHE:-$HOME/.cache/ds4/tokenizers}"
rm -rf .gpu/tokz
for d in "$cache"/*/; do
  m="$(basename "$d")"
  mkdir -p ".gpu/tokz/$m"
  xz -9 -c "$d/tokenizer.json" > ".gpu/tokz/$m/tokenizer.json.xz"
  cp "$d/tokenizer_config.json" ".gpu/tokz/$m/"
done
du -sh .gpu/tokz
