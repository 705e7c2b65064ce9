#!/usr/bin/env bash
# Installs dependencies, builds ds4, and runs its main job on the model shipped in the repository.
# Extra arguments replace the default command, e.g.: bash tools/quickstart.sh generate --prompt "Hello"
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target ds4
if [ $# -gt 0 ]; then exec ./build/ds4 "$@"; fi
# Until the trained default model lands, the main job runs on a committed oracle fixture (random weights).
exec ./build/ds4 generate --model tests/fixtures/qwen4/text_f32 --tokens 5,9,11,200,17 --max-tokens 16 \
  --temperature 0 --json
