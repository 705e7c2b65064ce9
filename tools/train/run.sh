#!/usr/bin/env bash
# Train, evaluate and export the default model (models/tiny-flash-next) on the GPU machine.
#
#   OUT=/some/dir tools/train/run.sh [train.py options, e.g. --seconds 30 for a smoke test]
#
# Needs the corpus in .gpu/corpus (tools/train/build_corpus.sh; carry ".gpu/corpus"), python3 with torch,
# transformers 5.17, tokenizers, numpy, safetensors; no network. Writes to $OUT:
#   tiny-flash-next.tar  (README.md for models/, and the model directory tiny-flash-next/)
#   metrics.json         (parameters, tokens, timings, validation losses, MTP agreement, samples)
#   train.log            (the full log)
# The script ends within about 8 minutes (train.py --deadline); training stops on a wall-clock budget.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-$PWD/out}"
mkdir -p "$OUT"
if [[ ! -f .gpu/corpus/manifest.json ]]; then
  echo "run.sh: .gpu/corpus/manifest.json missing: build the corpus with tools/train/build_corpus.sh and carry .gpu/corpus" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
nproc
exec python3 -u tools/train/train.py --corpus .gpu/corpus --out "$OUT" "$@"
