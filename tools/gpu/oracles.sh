#!/usr/bin/env bash
# On the GPU machine (torch + transformers there), from the repository root:
#   bash tools/gpu/oracles.sh
# with .gpu/tokz carried: the real tokenizer files, xz-compressed so that they fit the transfer limit beside
# the shipped model. Make it here with tools/gpu/pack-tokenizers.sh (after tools/fetch-tokenizers.sh).
# Runs every reference script of tools/oracle/ that needs transformers or HF tokenizers, and packs what they
# write into $OUT/oracles.tgz (unpack with tools/gpu/unpack-oracles.sh); the log goes to $OUT/oracles.log.
# DS4_ORACLES picks steps (default: all): "tokenizer templates default_model qwen4".
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/gpu-out}"
work=/tmp/ds4-oracles
rm -rf "$work"
mkdir -p "$out" "$work"/{tokenizers,tokenizer,default_model,qwen4}
export PYTHONUNBUFFERED=1
step() { echo; echo "=== [$SECONDS s] $*"; }
status=0
steps="${DS4_ORACLES:-tokenizer templates default_model qwen4}"
want() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

main() {
step "unpack tokenizers"
python3 - <<'EOF' || return 2
import lzma, pathlib, shutil
src, dst = pathlib.Path(".gpu/tokz"), pathlib.Path("/tmp/ds4-oracles/tokenizers")
for d in sorted(src.iterdir()):
    (dst / d.name).mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if f.suffix == ".xz":
            (dst / d.name / f.stem).write_bytes(lzma.decompress(f.read_bytes()))
        else:
            shutil.copy(f, dst / d.name / f.name)
    print(d.name, sorted(p.name for p in (dst / d.name).iterdir()))
EOF
python3 -c "import tokenizers, transformers, torch; print('tokenizers', tokenizers.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__)"

if want tokenizer; then
  step "tokenizer reference ids"
  python3 tools/oracle/tokenizer_reference.py --tokenizers "$work/tokenizers" \
    --strings tests/fixtures/tokenizer/strings.jsonl --out "$work/tokenizer" || status=1
fi

if want templates; then
  step "chat templates against transformers"
  python3 tools/oracle/verify_with_transformers.py --tokenizers "$work/tokenizers" || status=1
fi

if want default_model; then
  step "default model reference"
  python3 tools/oracle/make_default_model_reference.py --out "$work/default_model" || status=1
fi

if want qwen4; then
  step "qwen4 fixtures"
  python3 tools/oracle/make_qwen4_fixtures.py --out "$work/qwen4" || status=1
fi

step "pack"
tar czf "$out/oracles.tgz" -C "$work" tokenizer default_model qwen4
ls -la "$out"
return $status
}

main 2>&1 | tee "$out/oracles.log"
exit "${PIPESTATUS[0]}"
