#!/usr/bin/env bash
# Installs the official `openai` npm client (pinned) that the server tests drive `ds4 serve` with, into a
# cache directory, and prints the node_modules directory that holds it. Idempotent.
set -euo pipefail
ver=4.104.0
dir="${DS4_OPENAI_CLIENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ds4/openai-client-$ver}"
if [ ! -f "$dir/node_modules/openai/package.json" ]; then
  mkdir -p "$dir"
  (cd "$dir" && echo '{"private": true}' > package.json &&
   npm install --silent --no-audit --no-fund --no-package-lock "openai@$ver" >&2)
fi
echo "$dir/node_modules"
