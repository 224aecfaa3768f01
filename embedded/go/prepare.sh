#!/usr/bin/env bash
# Put the static binary and its filled-in manifest beside the Go package
# binary, where its `//go:embed` picks them up (both git-ignored):
#   embedded/go/binary/nvke-cert-runbook  <- target/static/nvke-cert-runbook
#   embedded/go/binary/manifest.json      <- embedded/gen-manifest
#
#   embedded/go/prepare.sh [BINARY]   (default: target/static/nvke-cert-runbook,
#                                      built by packaging/build-static)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
bin=${1:-$repo/target/static/nvke-cert-runbook}

[ -x "$bin" ] || { echo "prepare.sh: no executable at $bin: run packaging/build-static first" >&2; exit 1; }
if readelf -d "$bin" 2>/dev/null | grep -q '(NEEDED)'; then
  echo "prepare.sh: $bin is not statically linked" >&2
  exit 1
fi
dst="$here/binary"
install -m 0755 "$bin" "$dst/nvke-cert-runbook.tmp"
mv "$dst/nvke-cert-runbook.tmp" "$dst/nvke-cert-runbook"
"$repo/embedded/gen-manifest" "$dst/nvke-cert-runbook" "$dst/manifest.json"
# (the layout before the package split put them in embedded/go itself)
rm -f "$here/nvke-cert-runbook" "$here/manifest.json"
