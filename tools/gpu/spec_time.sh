#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh (same call): speculative decoding with the MTP head against plain
# decoding on the shipped model, greedy, for each given build (default: build-gpu; e.g. a variant built by
# build_variant.sh as DIR/build-gpu). Prints, per build and mode, the tokens, the drafts accepted, the seconds of
# the generation (prompt and completion, as `ds4 generate --json` reports them; a build without that field: the
# run's wall time, model load included), tokens/s, and whether the speculative run emitted plain decoding's tokens.
#   bash tools/gpu/spec_time.sh [BUILD_DIR ...]     (DS4_SPEC_TOKENS: tokens to generate, default 400;
#                                                    DS4_SPEC_BACKEND=cpu tries the script without a GPU)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
n="${DS4_SPEC_TOKENS:-400}"
[ $# -eq 0 ] && set -- "$gpu_root/build-gpu"
common=(generate --backend "${DS4_SPEC_BACKEND:-cuda}" --prompt "Tell me a long story about a lighthouse keeper." --temperature 0 --json)
run() {  # build, extra args...: prints "milliseconds json" (wall time of the whole run)
  local b="$1"; shift
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(cd "$gpu_root" && LD_LIBRARY_PATH="$gpu_libdir" timeout 300 "$b/ds4" "${common[@]}" "$@" 2>/dev/null)
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 )) $out"
}
echo "| build | mode | tokens | accepted / drafted | seconds | tokens/s | same tokens as plain |"
echo "|---|---|---:|---:|---:|---:|---|"
for b in "$@"; do
  plain=$(run "$b" --max-tokens "$n" --ignore-eos)
  spec=$(run "$b" --max-tokens "$n" --ignore-eos --speculative)
  python3 - "$b" "$plain" "$spec" <<'EOF'
import json, sys
b = sys.argv[1]
runs = {}
for mode, line in (("plain", sys.argv[2]), ("speculative", sys.argv[3])):
    ms, _, js = line.partition(" ")
    d = json.loads(js)
    runs[mode] = (d.get("seconds", float(ms) / 1000), d)
for mode, (s, d) in runs.items():
    toks = len(d["tokens"])
    acc = f'{d["accepted"]} / {d["drafted"]}' if "drafted" in d else "-"
    same = "-" if mode == "plain" else ("yes" if d["tokens"] == runs["plain"][1]["tokens"] else "NO")
    print(f"| {b} | {mode} | {toks} | {acc} | {s:.2f} | {toks / s if s > 0 else 0:.1f} | {same} |")
EOF
done
