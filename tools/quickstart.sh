#!/usr/bin/env bash
# Installs dependencies, builds ds4, and runs its main job (a terminal chat) on the model shipped in the
# repository.
# Extra arguments replace the default command, e.g.: bash tools/quickstart.sh generate --prompt "Hello"
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target ds4
if [ $# -gt 0 ]; then exec ./build/ds4 "$@"; fi
# The main job: chat in the terminal with the model shipped in models/tiny-flash-next.
exec ./build/ds4 run
