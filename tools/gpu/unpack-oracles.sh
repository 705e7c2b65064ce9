#!/usr/bin/env bash
# Development machine: installs what tools/gpu/oracles.sh brought back (oracles.tgz) into tests/fixtures/.
#   bash tools/gpu/unpack-oracles.sh PATH/TO/oracles.tgz
# The tokenizer reference .jsonl files are stored zstd-compressed (the tests read X.jsonl.zst); the qwen4 and
# default_model fixtures are copied as they are.
set -euo pipefail
tgz="$(realpath "$1")"
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar xzf "$tgz" -C "$work"
if [ -d "$work/qwen4" ]; then rm -rf tests/fixtures/qwen4; cp -r "$work/qwen4" tests/fixtures/qwen4; fi
if [ -d "$work/default_model" ]; then rm -rf tests/fixtures/default_model; cp -r "$work/default_model" tests/fixtures/; fi
if [ -d "$work/tokenizer" ]; then
  for f in "$work"/tokenizer/*.jsonl; do
    name="$(basename "$f")"
    rm -f "tests/fixtures/tokenizer/$name"
    zstd -19 -q -f "$f" -o "tests/fixtures/tokenizer/$name.zst"
  done
  cp "$work"/tokenizer/*.json tests/fixtures/tokenizer/
fi
git status --short tests/fixtures
