#!/usr/bin/env bash
# Run on the development machine (Debian 12, network): downloads the Debian packages whose headers and libraries
# the GPU machine lacks for configuring and building ds4 (PCRE2, utf8proc, cpp-httplib with what its pkg-config
# file requires, xxhash, zstd, and pkgconf in case pkg-config is missing there) into .gpu/debs/ of this checkout.
# Then carry .gpu to the GPU machine and run tools/gpu/run.sh there; it unpacks them with dpkg -x.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The GPU machine has pkg-config. The working tree plus these must stay under the transfer limit.
pkgs=(
  libpcre2-dev libpcre2-8-0
  libutf8proc-dev libutf8proc2
  libxxhash-dev libxxhash0 libzstd-dev libzstd1
)
# DS4_GPU_HTTP=1: cpp-httplib and what its pkg-config file requires too (about 6 MB more), so that run.sh builds
# the HTTP server and tools/gpu/serve_check.sh can run `ds4 serve --backend cuda`; without them the GPU build
# leaves the server out.
if [ "${DS4_GPU_HTTP:-0}" = 1 ]; then
  pkgs+=(libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 libbrotli-dev libbrotli1 zlib1g-dev)
fi
mkdir -p .gpu/debs
cd .gpu/debs
rm -f ./*.deb
if ! apt-get download "${pkgs[@]}"; then
  # Stale package lists name versions the mirror no longer has: refresh them and try once more.
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  apt-get download "${pkgs[@]}"
fi
echo "fetched $(ls ./*.deb | wc -l) packages into $(pwd) ($(du -sh . | cut -f1))"
