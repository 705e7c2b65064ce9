# Sourced by the GPU machine's measurement scripts (ab.sh, layer_cost.sh, kernel_times.sh, profile.sh): the
# paths run.sh leaves, Nsight Compute's path, one variant's decode speed, and the Flash-Next shape made of one
# layer type.
gpu_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gpu_out="${OUT:-$gpu_root/gpu-out}"
gpu_build="${DS4_GPU_BUILD:-$gpu_root/build-gpu}"
gpu_libdir=/tmp/ds4-gpu-prefix/usr/lib/x86_64-linux-gnu  # run.sh's unpacked Debian packages
gpu_shape="$gpu_root/bench/configs/flash-next-shape.json"

# Nsight Compute's path, or nothing.
gpu_ncu() { command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true; }

# gpu_decode_tps 'VAR=value ...' [ds4 bench arguments]: decode tokens/s of `ds4 bench --backend cuda
# --random-weights` with those variables set (DS4_AB_BUILD=dir among them runs that build's ds4), one line per
# decode phase; nothing when the run failed.
gpu_decode_tps() {
  local vars="$1" vbuild="$gpu_build" v
  shift
  for v in $vars; do case "$v" in DS4_AB_BUILD=*) vbuild="${v#DS4_AB_BUILD=}" ;; esac; done
  (cd "$gpu_root" && env $vars LD_LIBRARY_PATH="$gpu_libdir" "$vbuild/ds4" bench --backend cuda --random-weights \
    --ple-vocab-base 100000 "$@" 2>/dev/null | awk -F'|' '/^\| decode/ {gsub(/ /, "", $5); print $5}')
}

# gpu_one_type_config gdn|attn FILE: the Flash-Next shape (48 layers) with every layer GDN (a huge
# full_attention_interval) or every layer sparse attention (interval 1), without the PLE layer (the config allows
# PLE on GDN layers only).
gpu_one_type_config() {
  local interval=1000000
  [ "$1" = attn ] && interval=1
  sed -E "s/\"num_hidden_layers\": [0-9]+,/\"num_hidden_layers\": 48, \"full_attention_interval\": $interval,/; s/\"ple_layer_ids\": \[[0-9, ]*\]/\"ple_layer_ids\": []/" \
    "$gpu_shape" > "$2"
}
