#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call): what one layer of each type costs in
# a replayed decode step. Times `ds4 bench` decode on the Flash-Next shape made of one layer type only (every
# layer GDN, or every layer sparse attention) at two depths; the difference of the step times over the difference
# of the depths is one layer's cost, without the lm_head, embedding and final mixer that every step pays once.
#   bash tools/gpu/layer_cost.sh ['name:VAR=1 ...' ...]      (no argument: one variant, the plain build)
# DS4_LC_LAYERS (default "4 12"), DS4_LC_ROUNDS (default 2), DS4_LC_ARGS (extra ds4 bench args, default: 64
# experts, 16-token prefill, 64 decoded tokens). Variants as in ab.sh (DS4_AB_BUILD=dir runs that build's ds4).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
read -r l1 l2 <<< "${DS4_LC_LAYERS:-4 12}"
rounds="${DS4_LC_ROUNDS:-2}"
args=(${DS4_LC_ARGS:---experts 64 --prefill 16 --decode 64})
[ $# -eq 0 ] && set -- 'base:'
tmp="$(mktemp -d)"
for kind in gdn attn; do gpu_one_type_config "$kind" "$tmp/$kind.json"; done
declare -A res
for ((r = 1; r <= rounds; r++)); do
  for spec in "$@"; do
    name="${spec%%:*}"
    for kind in gdn attn; do
      for n in "$l1" "$l2"; do
        tps=$(gpu_decode_tps "${spec#*:}" --config "$tmp/$kind.json" --layers "$n" "${args[@]}")
        res[$name/$kind/$n]="${res[$name/$kind/$n]:-} ${tps:-0}"
      done
    done
  done
done
echo "| variant | layer type | tok/s at $l1 layers | tok/s at $l2 layers | us per layer (each round) |"
echo "|---|---|---|---|---|"
for spec in "$@"; do
  name="${spec%%:*}"
  for kind in gdn attn; do
    a=(${res[$name/$kind/$l1]}); b=(${res[$name/$kind/$l2]})
    per=""
    for ((i = 0; i < ${#a[@]}; i++)); do
      per+=" $(awk -v x="${a[$i]}" -v y="${b[$i]}" -v d=$((l2 - l1)) \
        'BEGIN { if (x > 0 && y > 0) printf "%.1f", (1e6 / y - 1e6 / x) / d; else printf "fail" }')"
    done
    echo "| $name (${spec#*:}) | $kind |${res[$name/$kind/$l1]} |${res[$name/$kind/$l2]} |$per |"
  done
done
rm -rf "$tmp"
