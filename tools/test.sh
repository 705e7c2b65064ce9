#!/usr/bin/env bash
# Installs dependencies, builds ds4 and its tests, and runs the whole test suite (CPU only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
export DS4_TOKENIZER_CACHE="${DS4_TOKENIZER_CACHE:-$(bash tools/fetch-tokenizers.sh)}"
build="${DS4_BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 600)
# The server's parsers under libFuzzer (clang, ASan + UBSan) for a bounded number of executions.
cmake -S . -B "$build-fuzz" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DDS4_FUZZ=ON -DDS4_TESTS=OFF >/dev/null
cmake --build "$build-fuzz" -j"$(nproc)" --target fuzz_request_parser fuzz_tool_call_parser
cd "$build-fuzz" && ctest --output-on-failure -L fuzz --timeout 600
