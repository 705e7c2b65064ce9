#!/usr/bin/env bash
# Build the training corpus of the default model (models/tiny-flash-next) from Debian packages.
#
#   tools/train/build_corpus.sh [OUT_DIR]      (default: <repo>/.gpu/corpus)
#
# Installs the source packages (root, Debian bookworm), dumps the texts that need a tool to read
# (Jane Austen's novels from the R package, the World English Bible from its SWORD module), then
# runs build_corpus.py, which cleans everything, synthesises chat conversations and writes
# gzip JSON-lines shards plus manifest.json (sources and licences) to OUT_DIR.
# .gpu/ is git-ignored; it travels to the GPU machine when a run names it in `carry`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/.gpu/corpus}"

pkgs=(r-cran-janeaustenr sword-text-web libsword-utils wordnet-base dict-devil dict-jargon
      fortunes fortunes-min fortune-anarchism)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/austen"
Rscript -e 'library(janeaustenr);
  for (n in c("sensesensibility","prideprejudice","mansfieldpark","emma","northangerabbey","persuasion"))
    writeLines(get(n), file.path(commandArgs(TRUE)[1], paste0(n, ".txt")), useBytes=TRUE)' "$tmp/austen"
mod2imp engWEB2015eb > "$tmp/web.imp"

python3 "$here/build_corpus.py" --austen-dir "$tmp/austen" --web-imp "$tmp/web.imp" --out "$out"
du -sh "$out"
