#!/usr/bin/env bash
# Put the static binary and its filled-in manifest beside the Go package,
# where `//go:embed` picks them up (both git-ignored):
#   embedded/go/nvke-cert-runbook  <- target/static/nvke-cert-runbook
#   embedded/go/manifest.json      <- embedded/gen-manifest
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
install -m 0755 "$bin" "$here/nvke-cert-runbook.tmp"
mv "$here/nvke-cert-runbook.tmp" "$here/nvke-cert-runbook"
"$repo/embedded/gen-manifest" "$here/nvke-cert-runbook" "$here/manifest.json"
