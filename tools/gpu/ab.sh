#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call): A/B decode speed of variants that
# differ only in environment variables, interleaved round by round so that clock drift hits them all alike.
#   bash tools/gpu/ab.sh 'base:' 'pre:DS4_EXP_PRE=1' ...
# Each argument is name:VAR=value VAR=value... (DS4_AB_BUILD=dir among them runs that build's ds4: a variant
# compiled differently, e.g. by run.sh with DS4_GPU_BUILD and DS4_GPU_CMAKE_ARGS); DS4_AB_ROUNDS (default 3), DS4_AB_ARGS (extra ds4 bench args,
# default: 8 layers, 16-token prefill, 128 decoded tokens). Prints one table row per variant (tok/s of each round,
# their mean and the mean against the first variant).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
rounds="${DS4_AB_ROUNDS:-3}"
args=(${DS4_AB_ARGS:---layers 8 --prefill 16 --decode 128})
declare -A res
for ((r = 1; r <= rounds; r++)); do
  for spec in "$@"; do
    name="${spec%%:*}"
    tps=$(gpu_decode_tps "${spec#*:}" --config "$gpu_shape" "${args[@]}")
    res[$name]="${res[$name]:-} ${tps:-fail}"
  done
done
# Each variant's rounds, their mean, and the mean against the first variant's (failed rounds left out).
echo "| variant | decode tok/s per round | mean | against ${1%%:*} |"
echo "|---|---|---:|---:|"
base=""
for spec in "$@"; do
  name="${spec%%:*}"
  mean=$(echo "${res[$name]}" | awk '{s = 0; n = 0; for (i = 1; i <= NF; i++) if ($i != "fail") { s += $i; n++ } if (n) printf "%.1f", s / n}')
  [ -z "$base" ] && base="$mean"
  rel=$(awk -v m="$mean" -v b="$base" 'BEGIN { if (m != "" && b > 0) printf "%+.1f %%", 100 * (m / b - 1) }')
  echo "| $name (${spec#*:}) |${res[$name]} | ${mean:--} | ${rel:--} |"
done
